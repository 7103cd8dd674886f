package jobfile

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/internal/parallel"
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
// or added (the registry was unreachable) is tried again; followOpTimeout
// bounds each registry request; followWorkers is how many definitions
// are read and added at once.
const (
	followRetryMin  = 500 * time.Millisecond
	followRetryMax  = 30 * time.Second
	followOpTimeout = 30 * time.Second
	followWorkers   = 16
)

// Follow runs, on sched, the jobs defined at run time in rc's namespace
// (see [Define] and the HTTP API's POST /jobs), until ctx ends. It watches
// every job's definition node: a new definition is built with [Build] and
// added to sched (before or after sched.Start), a changed one replaces the
// job here (removed, then added as now defined), a deleted one removes it
// here. Only script and http definitions are run, and script ones only
// with AllowScript.
//
// A definition gets the checks [Define] makes before it stores one, and
// then sched's: one refused for them, for its type, or because this
// instance has a job of that name already, is logged once with the job's
// name and the reason, and left alone until its stored version changes.
// Definitions are read and added several at a time, each on its own: one
// that takes long to build, or cannot be added, never holds up the
// others. One that runs after others (after:) is added once they are
// added here, and refused if one of them is refused here. Only a
// definition that could not be read or added for want of the registry is
// tried again, after a backoff of its own. A definition whose job has no
// config node is being removed and is not started.
//
// While it runs, Follow announces in the registry that this instance
// follows http definitions (and script ones with AllowScript), with an
// ephemeral node per type (see [Followers]): what Define's
// RequireFollower, and so POST /jobs, look for.
//
// A scheduler follows definitions only through Follow: one that does not
// call it ignores them. Follow returns nil when ctx ends, once the
// definitions it was reading are done (each registry request is bounded),
// leaving the jobs it added on sched (sched.Shutdown stops them; removing
// a job from the cluster stops it there all the same, through its config
// node). It returns an error at once only for bad arguments.
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
		wake: make(chan struct{}, 1), jobs: map[string]*followed{}, dirty: map[string]bool{},
		waiting: map[string]map[string]bool{}, listAll: true, announce: true,
		sem: make(chan struct{}, followWorkers), types: []Type{TypeHTTP}}
	if o.AllowScript {
		f.types = append(f.types, TypeScript)
	}
	defer f.close()
	f.sessCancel = rc.OnSession(func(ev regcenter.SessionEvent) {
		if ev.Type == regcenter.SessionNew {
			f.mu.Lock()
			f.announce = true
			f.mu.Unlock()
			f.poke()
		}
	})
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
	backoff := followRetryMin // the list's and the announcement's
	for {
		next, ok := f.reconcile(ctx)
		if ok {
			backoff = followRetryMin
		} else if ctx.Err() == nil {
			if next == 0 || backoff < next {
				next = backoff
			}
			backoff = min(2*backoff, followRetryMax)
		}
		retry.Stop()
		if next > 0 && next < time.Hour {
			retry.Reset(next)
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
// read again and wake the loop; the loop (Follow's goroutine) lists the
// jobs and hands the definitions to read to workers, at most
// followWorkers at once, one per job at a time.
type follower struct {
	sched *job.Scheduler
	rc    regcenter.Center
	o     FollowOptions
	log   *slog.Logger
	wake  chan struct{}
	types []Type        // the types announced
	sem   chan struct{} // a slot per worker running

	mu       sync.Mutex
	listAll  bool                       // list the namespace's jobs again
	readAll  bool                       // read every known job's definition again (a resync)
	announce bool                       // (re)make the announcements
	dirty    map[string]bool            // jobs whose definition to read again
	jobs     map[string]*followed       // added and deleted by the loop
	waiting  map[string]map[string]bool // a job → the definitions waiting for it to be added or refused here

	rootCancel, sessCancel func() // the loop's own
	workers                sync.WaitGroup
}

// followed is what Follow knows of one job of the namespace.
type followed struct {
	cancel func() // the definition node's watch

	// Under follower.mu.
	busy     bool          // a worker is reading it
	vanished bool          // its job node went while a worker was reading it
	stale    bool          // read it anew even if unchanged: a job it runs after was added or refused
	state    followState   // what became of its definition here
	retryAt  time.Time     // not read again before this (a registry failure)
	backoff  time.Duration // the last wait before retryAt

	// The worker's while busy, else the loop's.
	sum   [sha256.Size]byte // the definition last acted on
	seen  bool              // sum and made are set
	made  int64             // its node's creation (Stat.Czxid): a job removed and defined again is new
	added bool              // this follower added the job to the scheduler
}

// followState is what became of a job's definition on this follower.
type followState int

const (
	followPending followState = iota // not settled yet, or there is none
	followAdded                      // the job runs here
	followRefused                    // refused here: logged, and left alone until it changes
)

// readResult is what one read of a definition asks of the loop.
type readResult int

const (
	readDone  readResult = iota // acted on: nothing more until it changes
	readRetry                   // the registry failed: read again after a backoff
	readWait                    // waits for a job it runs after (it is in follower.waiting)
)

func (f *follower) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
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
	f.poke()
}

// close stops the watches once the workers are done, and withdraws the
// announcements.
func (f *follower) close() {
	f.workers.Wait()
	if f.sessCancel != nil {
		f.sessCancel()
	}
	if f.rootCancel != nil {
		f.rootCancel()
	}
	for _, j := range f.jobs {
		j.cancel()
	}
	withdraw(f.rc, f.sched.ServerID(), f.types, f.log)
}

// reconcile lists the jobs when asked, makes the announcements, and hands
// the definitions to read to workers. It reports when to run again at the
// latest for a definition waiting on its backoff (0: no such wait), and
// false when the list or an announcement failed and must be tried again.
func (f *follower) reconcile(ctx context.Context) (time.Duration, bool) {
	f.mu.Lock()
	listAll, readAll, ann := f.listAll, f.readAll, f.announce
	f.listAll, f.readAll, f.announce = false, false, false
	f.mu.Unlock()
	ok := true
	if ann && !f.makeAnnouncements(ctx) {
		f.mu.Lock()
		f.announce = true
		f.mu.Unlock()
		ok = false
	}
	if listAll && !f.list(ctx, readAll) {
		f.mu.Lock()
		f.listAll, f.readAll = true, f.readAll || readAll
		f.mu.Unlock()
		ok = false
	}
	return f.dispatch(ctx), ok
}

// makeAnnouncements says in the registry which types this instance
// follows.
func (f *follower) makeAnnouncements(ctx context.Context) bool {
	for _, typ := range f.types {
		actx, cancel := context.WithTimeout(ctx, followOpTimeout)
		err := announce(actx, f.rc, typ, f.sched.ServerID())
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				f.log.Warn("following job definitions: announcing that this instance follows them", "type", string(typ), "err", err)
			}
			return false
		}
	}
	return true
}

// dispatch starts a worker for each job to read, while slots are free:
// not one being read, nor one waiting on its backoff. It returns the wait
// until the earliest such backoff ends (0: none).
func (f *follower) dispatch(ctx context.Context) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	var next time.Duration
	for name := range f.dirty {
		if ctx.Err() != nil {
			return 0
		}
		j := f.jobs[name]
		switch {
		case j == nil:
			delete(f.dirty, name) // the job's node is gone; list dealt with it
			continue
		case j.busy:
			continue // read again once this read is done (its end wakes the loop)
		case now.Before(j.retryAt):
			if d := j.retryAt.Sub(now); next == 0 || d < next {
				next = d
			}
			continue
		}
		select {
		case f.sem <- struct{}{}:
		default:
			return next // every slot busy: a worker's end wakes the loop
		}
		delete(f.dirty, name)
		j.busy = true
		stale := j.stale
		j.stale = false
		f.workers.Add(1)
		go func() { // owned by the follower: close waits for it
			defer f.workers.Done()
			res := f.read(ctx, name, j, stale)
			<-f.sem
			f.finished(name, j, res)
		}()
	}
	return next
}

// finished records the end of a worker's read of name.
func (f *follower) finished(name string, j *followed, res readResult) {
	f.mu.Lock()
	j.busy = false
	switch res {
	case readRetry:
		j.backoff = min(max(2*j.backoff, followRetryMin), followRetryMax)
		j.retryAt = time.Now().Add(j.backoff)
		f.dirty[name] = true
	case readDone:
		j.backoff, j.retryAt = 0, time.Time{}
	}
	if j.vanished {
		f.listAll = true // list deals with it now that it is not busy
	}
	f.mu.Unlock()
	f.poke()
}

// settle records what became of name's definition, and has the
// definitions waiting for it read again.
func (f *follower) settle(name string, j *followed, st followState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	j.state = st
	if st == followPending {
		return
	}
	for child := range f.waiting[name] {
		if cj := f.jobs[child]; cj != nil {
			cj.stale = true
			f.dirty[child] = true
		}
	}
	delete(f.waiting, name)
}

// list lists the namespace's jobs: it watches the definition of each new
// one and marks it to be read (every job when readAll), and acts on the
// disappearance of the gone ones.
func (f *follower) list(ctx context.Context, readAll bool) bool {
	lctx, cancel := context.WithTimeout(ctx, followOpTimeout)
	kids, err := f.rc.Children(lctx, "/")
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			f.log.Warn("following job definitions: listing the namespace's jobs", "err", err)
		}
		return false
	}
	present := make(map[string]bool, len(kids))
	var fresh []string
	f.mu.Lock()
	for _, name := range kids {
		if strings.HasPrefix(name, ".") {
			continue // the namespace's own nodes, never a job
		}
		present[name] = true
		if _, known := f.jobs[name]; known {
			if readAll {
				f.dirty[name] = true
			}
			continue
		}
		fresh = append(fresh, name)
	}
	gone := map[string]*followed{}
	for name, j := range f.jobs {
		if present[name] {
			continue
		}
		if j.busy {
			j.vanished = true // dealt with once its read is done
			continue
		}
		gone[name] = j
	}
	f.mu.Unlock()
	// Armed first, read after: every change after the arming reaches the
	// watch. A job without a definition (most are defined in a program or
	// a file) costs no read. A watch that cannot be armed now is armed
	// later and reports a resync, which marks the job. Each arming is one
	// round trip: they are made side by side.
	type armed struct {
		stop func()
		read bool
	}
	arms := make([]armed, len(fresh))
	parallel.Each(len(fresh), 32, func(i int) {
		name := fresh[i]
		wctx, cancel := context.WithTimeout(ctx, followOpTimeout)
		st, stop, err := f.rc.WatchNow(wctx, layout.Job(name).Definition(), regcenter.WatchNode, func(regcenter.Event) {
			f.mark(false, name)
		})
		cancel()
		arms[i] = armed{stop: stop, read: err != nil || st.Exists}
	})
	f.mu.Lock()
	for i, name := range fresh {
		f.jobs[name] = &followed{cancel: arms[i].stop}
		if arms[i].read {
			f.dirty[name] = true
		}
	}
	for name := range gone {
		delete(f.jobs, name)
		delete(f.dirty, name)
	}
	f.mu.Unlock()
	// Not busy, and no longer in f.jobs: no worker can start on them.
	for name, j := range gone {
		f.gone(ctx, name, j)
		j.cancel()
	}
	return true
}

// read reads one job's definition and acts on it; stale says to act even
// if it is unchanged. It runs on a worker, which has j to itself.
func (f *follower) read(ctx context.Context, name string, j *followed, stale bool) readResult {
	gctx, cancel := context.WithTimeout(ctx, followOpTimeout)
	doc, st, err := f.rc.Get(gctx, layout.Job(name).Definition())
	cancel()
	if errors.Is(err, regcenter.ErrNoNode) {
		f.gone(ctx, name, j)
		return readDone
	}
	if err != nil {
		if ctx.Err() == nil {
			f.log.Warn("following job definitions: reading a definition", "job", name, "err", err)
		}
		return readRetry
	}
	sum := sha256.Sum256(doc)
	if j.seen && sum == j.sum && st.Czxid == j.made && !stale {
		return readDone // acted on already (added, or refused and logged)
	}
	if j.added {
		f.remove(ctx, name, j, "its definition changed: replacing it")
		f.settle(name, j, followPending)
	}
	var sp Spec
	var built job.Job
	// Decoded and built before its type is looked at, as a file's job is:
	// a refusal then names the definition's own problems first.
	sp, built, err = checkDefinition(ctx, f.rc, doc, func(sp Spec) (job.Job, error) {
		if sp.Name != name {
			return nil, fmt.Errorf("%w: the definition names job %q, not %q", ErrInvalidJob, sp.Name, name)
		}
		if sp.TypeOrDefault() == TypeScript && !f.o.AllowScript {
			return nil, errors.New("script definitions run commands on this host, and this instance does not allow them (FollowOptions.AllowScript)")
		}
		if sp.ListsByCommand() && !f.o.AllowScript {
			return nil, errors.New("an items: command runs on this host, and this instance does not allow commands from definitions (FollowOptions.AllowScript)")
		}
		return Build(sp, f.sched, f.o.Options)
	})
	var re *registryError
	switch {
	case errors.As(err, &re):
		if ctx.Err() == nil {
			f.log.Warn("following job definitions: checking a definition", "job", name, "err", err)
		}
		return readRetry
	case err != nil:
		return f.refuse(name, j, sum, st.Czxid, err)
	}
	ectx, cancel := context.WithTimeout(ctx, followOpTimeout)
	ok, _, err := f.rc.Exists(ectx, layout.Job(name).Config())
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			f.log.Warn("following job definitions: reading a job's config", "job", name, "err", err)
		}
		return readRetry
	}
	if !ok {
		j.sum, j.made, j.seen = sum, st.Czxid, true
		f.log.Info("job definition not started: the job has no config node (it is being removed)", "job", name)
		return readDone
	}
	if res, err := f.awaitParents(name, sp); err != nil {
		return f.refuse(name, j, sum, st.Czxid, err)
	} else if res == readWait {
		return readWait
	}
	actx, cancel := context.WithTimeout(ctx, followOpTimeout)
	err = f.sched.Add(actx, sp.Config, built)
	cancel()
	switch {
	case err == nil:
	case transient(err) || ctx.Err() != nil:
		if ctx.Err() == nil {
			f.log.Warn("following job definitions: adding a job", "job", name, "err", err)
		}
		return readRetry
	default:
		// The definition's own fault, or this instance's (a job of that
		// name here already): trying again would fail again.
		return f.refuse(name, j, sum, st.Czxid, err)
	}
	j.sum, j.made, j.seen, j.added = sum, st.Czxid, true, true
	f.settle(name, j, followAdded)
	f.log.Info("job definition followed: job added", "job", name, "type", string(sp.TypeOrDefault()))
	return readDone
}

// awaitParents reports whether the jobs sp runs after are all added here
// (readDone), or some is still to be settled here (readWait: sp's job is
// read again once it is), or an error when one was refused here.
func (f *follower) awaitParents(name string, sp Spec) (readResult, error) {
	parents := parentNames(sp.Config)
	if len(parents) == 0 {
		return readDone, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	wait := func(p string) { // read name again once p is settled (again)
		if f.waiting[p] == nil {
			f.waiting[p] = map[string]bool{}
		}
		f.waiting[p][name] = true
	}
	for _, p := range parents {
		if pj := f.jobs[p]; pj != nil && pj.state == followRefused {
			// Read again if that one changes and is added after all.
			wait(p)
			return readDone, fmt.Errorf("%w: job %q runs after job %q, which this instance refused", job.ErrInvalidConfig, name, p)
		}
	}
	res := readDone
	for _, p := range parents {
		if pj := f.jobs[p]; pj == nil || pj.state != followAdded {
			// Not settled here yet (or not listed yet).
			wait(p)
			res = readWait
		}
	}
	return res, nil
}

// refuse logs why the definition of job name is not run, once: it is not
// read again until it changes (or a job it runs after does).
func (f *follower) refuse(name string, j *followed, sum [sha256.Size]byte, made int64, err error) readResult {
	j.sum, j.made, j.seen = sum, made, true
	f.settle(name, j, followRefused)
	f.log.Warn("job definition refused: not running it here", "job", name, "err", err)
	return readDone
}

// gone acts on a job's definition being deleted.
func (f *follower) gone(ctx context.Context, name string, j *followed) {
	if j.added {
		f.remove(ctx, name, j, "its definition was deleted")
	}
	j.seen = false
	f.settle(name, j, followRefused)
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

// transient reports whether err is the registry's failure (or a request's
// deadline), which a later try may not meet.
func transient(err error) bool {
	for _, e := range []error{regcenter.ErrConnectionLoss, regcenter.ErrClosed, regcenter.ErrSessionLost,
		regcenter.ErrUnreachable, context.DeadlineExceeded, context.Canceled} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
