package jobfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// FollowOptions configure [Follow].
type FollowOptions struct {
	// Options are Build's: StateDir for script jobs ("" means
	// DefaultStateDir for the namespace and the scheduler's server id) and
	// Logger (nil means slog.Default()). Handlers are not used: a
	// definition never names a Go handler.
	Options
	// AllowScript lets this instance run script definitions. A script job
	// runs a command on the instance's host, so whoever can write a
	// definition (the HTTP API's token holders) could run any command
	// there: an instance runs them only when its program says so. Without
	// it, a script definition is refused (logged once) and only HTTP
	// definitions run.
	AllowScript bool
	// Namespace is the namespace of rc, for the default StateDir; "" means
	// the one rc reports.
	Namespace string
}

// followRetry bounds the wait before a definition that could not be read
// or added (the registry was unreachable) is tried again.
const (
	followRetryMin  = 500 * time.Millisecond
	followRetryMax  = 30 * time.Second
	followOpTimeout = 30 * time.Second
)

// Follow runs, on sched, the jobs defined at run time in rc's namespace
// (see [Define] and the HTTP API's POST /jobs), until ctx ends. It watches
// every job's definition node: a new definition is built with [Build] and
// added to sched (before or after sched.Start), a changed one replaces the
// job here (removed, then added as now defined), a deleted one removes it
// here. Only script and http definitions are run, and script ones only
// with AllowScript; a definition refused for that, or because it does not
// decode or build, or because this instance has a job of that name
// already, is logged once with the job's name and the reason, and left
// alone until it changes. A definition whose job has no config node is
// being removed and is not started.
//
// A scheduler follows definitions only through Follow: one that does not
// call it ignores them. Follow returns nil when ctx ends, leaving the jobs
// it added on sched (sched.Shutdown stops them; removing a job from the
// cluster stops it there all the same, through its config node). It
// returns an error at once only for bad arguments.
func Follow(ctx context.Context, sched *job.Scheduler, rc regcenter.Center, o FollowOptions) error {
	if sched == nil || rc == nil {
		return fmt.Errorf("%w: Follow needs a scheduler and a registry center", ErrInvalidJob)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Namespace == "" {
		if n, ok := rc.(interface{ Namespace() string }); ok {
			o.Namespace = strings.TrimPrefix(n.Namespace(), "/")
		}
	}
	if o.StateDir == "" {
		o.StateDir = DefaultStateDir(o.Namespace, sched.ServerID())
	}
	f := &follower{sched: sched, rc: rc, o: o, log: o.Logger.With("server", sched.ServerID()),
		wake: make(chan struct{}, 1), jobs: map[string]*followed{}, dirty: map[string]bool{}, listAll: true}
	defer f.close()
	// Armed before the first list, so that a job defined after that list
	// reaches the watch. If it cannot be armed now, it is armed later and
	// reports a resync then.
	wctx, cancel := context.WithTimeout(ctx, followOpTimeout)
	_, f.rootCancel, _ = rc.WatchNow(wctx, "/", regcenter.WatchChildren, func(ev regcenter.Event) {
		f.mark(ev.Type == regcenter.EventResync, "")
	})
	cancel()
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	backoff := followRetryMin
	for {
		if f.reconcile(ctx) {
			backoff = followRetryMin
		} else if ctx.Err() == nil {
			retry.Reset(backoff)
			backoff = min(2*backoff, followRetryMax)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-f.wake:
		case <-retry.C:
		}
	}
}

// follower is Follow's state. The watches' callbacks only mark what to
// read again and wake the loop; the loop (Follow's goroutine) does the
// rest.
type follower struct {
	sched *job.Scheduler
	rc    regcenter.Center
	o     FollowOptions
	log   *slog.Logger
	wake  chan struct{}

	mu      sync.Mutex
	listAll bool            // list the namespace's jobs again
	readAll bool            // read every known job's definition again (a resync)
	dirty   map[string]bool // jobs whose definition to read again

	rootCancel func()               // the namespace's watch; the loop's own
	jobs       map[string]*followed // the loop's own
}

// followed is what Follow knows of one job of the namespace.
type followed struct {
	cancel func() // the definition node's watch
	doc    []byte // the definition last acted on; nil when there is none
	made   int64  // its node's creation (Stat.Czxid): a job removed and defined again is new
	added  bool   // this follower added the job to the scheduler
}

// mark records a change: resync (anything may have changed), a job's
// definition (name), or the namespace's list of jobs (name "").
func (f *follower) mark(resync bool, name string) {
	f.mu.Lock()
	switch {
	case resync:
		f.listAll, f.readAll = true, true
	case name == "":
		f.listAll = true
	default:
		f.dirty[name] = true
	}
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *follower) close() {
	if f.rootCancel != nil {
		f.rootCancel()
	}
	for _, j := range f.jobs {
		j.cancel()
	}
}

// reconcile reads what changed and acts on it. It reports false when
// something could not be read or done and must be tried again.
func (f *follower) reconcile(ctx context.Context) bool {
	f.mu.Lock()
	listAll, readAll, dirty := f.listAll, f.readAll, f.dirty
	f.listAll, f.readAll, f.dirty = false, false, map[string]bool{}
	f.mu.Unlock()
	ok := true
	if listAll {
		if !f.list(ctx, readAll, dirty) {
			f.mu.Lock()
			f.listAll, f.readAll = true, f.readAll || readAll
			f.mu.Unlock()
			ok = false
		}
	}
	for name := range dirty {
		if ctx.Err() != nil {
			return false
		}
		if !f.read(ctx, name) {
			f.mu.Lock()
			f.dirty[name] = true
			f.mu.Unlock()
			ok = false
		}
	}
	return ok
}

// list lists the namespace's jobs: it watches the definition of each new
// one and marks it in dirty to be read (every job when readAll), and acts
// on the disappearance of the gone ones.
func (f *follower) list(ctx context.Context, readAll bool, dirty map[string]bool) bool {
	lctx, cancel := context.WithTimeout(ctx, followOpTimeout)
	kids, err := f.rc.Children(lctx, "/")
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			f.log.Warn("following job definitions: listing the namespace's jobs", "err", err)
		}
		return false
	}
	present := map[string]bool{}
	for _, name := range kids {
		if strings.HasPrefix(name, ".") {
			continue // the namespace's own nodes, never a job
		}
		present[name] = true
		if _, known := f.jobs[name]; known {
			if readAll {
				dirty[name] = true
			}
			continue
		}
		// Armed first, read after: every change after the arming reaches
		// the watch. A job without a definition (most are defined in a
		// program or a file) costs no read. A watch that cannot be armed
		// now is armed later and reports a resync, which marks the job.
		wctx, cancel := context.WithTimeout(ctx, followOpTimeout)
		st, stop, err := f.rc.WatchNow(wctx, layout.Job(name).Definition(), regcenter.WatchNode, func(regcenter.Event) {
			f.mark(false, name)
		})
		cancel()
		f.jobs[name] = &followed{cancel: stop}
		if err != nil || st.Exists {
			dirty[name] = true
		}
	}
	for name, j := range f.jobs {
		if !present[name] {
			f.gone(ctx, name, j)
			j.cancel()
			delete(f.jobs, name)
			delete(dirty, name)
		}
	}
	return true
}

// read reads one job's definition and acts on it.
func (f *follower) read(ctx context.Context, name string) bool {
	j, known := f.jobs[name]
	if !known {
		return true // the job's node is gone; list dealt with it
	}
	rctx, cancel := context.WithTimeout(ctx, followOpTimeout)
	defer cancel()
	doc, st, err := f.rc.Get(rctx, layout.Job(name).Definition())
	if errors.Is(err, regcenter.ErrNoNode) {
		f.gone(ctx, name, j)
		return true
	}
	if err != nil {
		if ctx.Err() == nil {
			f.log.Warn("following job definitions: reading a definition", "job", name, "err", err)
		}
		return false
	}
	if doc == nil {
		doc = []byte{}
	}
	if j.doc != nil && bytes.Equal(doc, j.doc) && st.Czxid == j.made {
		return true // acted on already (added, or refused and logged)
	}
	if j.added {
		f.remove(ctx, name, j, "its definition changed: replacing it")
	}
	sp, err := DecodeDefinition(rctx, doc)
	switch {
	case err != nil:
		return f.refuse(name, j, doc, st.Czxid, err)
	case sp.Name != name:
		return f.refuse(name, j, doc, st.Czxid, fmt.Errorf("%w: the definition names job %q, not %q", ErrInvalidJob, sp.Name, name))
	case sp.TypeOrDefault() == job.TypeScript && !f.o.AllowScript:
		return f.refuse(name, j, doc, st.Czxid, errors.New("script definitions run commands on this host, and this instance does not allow them (FollowOptions.AllowScript)"))
	}
	ok, _, err := f.rc.Exists(rctx, layout.Job(name).Config())
	if err != nil {
		if ctx.Err() == nil {
			f.log.Warn("following job definitions: reading a job's config", "job", name, "err", err)
		}
		return false
	}
	if !ok {
		j.doc, j.made = doc, st.Czxid
		f.log.Info("job definition not started: the job has no config node (it is being removed)", "job", name)
		return true
	}
	built, err := Build(sp, f.sched, f.o.Options)
	if err != nil {
		return f.refuse(name, j, doc, st.Czxid, err)
	}
	err = f.sched.Add(rctx, sp.Config, built)
	if errors.Is(err, job.ErrDuplicateJob) || errors.Is(err, job.ErrInvalidConfig) {
		return f.refuse(name, j, doc, st.Czxid, err)
	}
	if err != nil {
		if ctx.Err() == nil {
			f.log.Warn("following job definitions: adding a job", "job", name, "err", err)
		}
		return false
	}
	j.doc, j.made, j.added = doc, st.Czxid, true
	f.log.Info("job definition followed: job added", "job", name, "type", string(sp.TypeOrDefault()))
	return true
}

// refuse logs why the definition doc of job name is not run, once: it is
// not read again until it changes.
func (f *follower) refuse(name string, j *followed, doc []byte, made int64, err error) bool {
	j.doc, j.made = doc, made
	f.log.Warn("job definition refused: not running it here", "job", name, "err", err)
	return true
}

// gone acts on a job's definition being deleted.
func (f *follower) gone(ctx context.Context, name string, j *followed) {
	if j.added {
		f.remove(ctx, name, j, "its definition was deleted")
	}
	j.doc = nil
}

// remove removes a job this follower added from the scheduler. The job may
// have stopped by itself already (its config node deleted).
func (f *follower) remove(ctx context.Context, name string, j *followed, why string) {
	j.added = false
	rctx, cancel := context.WithTimeout(ctx, followOpTimeout)
	defer cancel()
	err := f.sched.Remove(rctx, name)
	switch {
	case err == nil:
		f.log.Info("job definition followed: job removed", "job", name, "why", why)
	case errors.Is(err, job.ErrUnknownJob):
		// Stopped already: removed from the cluster.
	default:
		f.log.Warn("job definition followed: stopping the job", "job", name, "why", why, "err", err)
	}
}
