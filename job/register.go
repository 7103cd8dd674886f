package job

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/regcenter"
)

// start registers the job under the current session, arms its watches
// and schedules it. A new job's tree is one transaction (createJob); a job
// that exists already is registered node by node (see startRegistered).
func (r *runner) start(ctx context.Context) error {
	var (
		sess    *regcenter.Session
		created bool
	)
	err := retryRegistration(ctx, r.log, r.s.startRetryBound(), "registering the job", func() (err error) {
		sess = r.rc.Session()
		created, err = r.createJob(ctx)
		return err
	})
	if err != nil {
		return err
	}
	return r.startRegistered(ctx, sess, created)
}

// startRegistered finishes start. created says that the job's tree was
// just made under sess, this instance registered in it: what is left is one
// round trip per watch. Otherwise the job exists already and is registered
// node by node (loadConfig, register). Joining the election and watching
// the disabled items wait until the job may run something (see prepare),
// unless that is soon or the job has failover on.
func (r *runner) startRegistered(ctx context.Context, sess *regcenter.Session, created bool) error {
	if created {
		r.book.Registered(sess)
		r.log.Info("registered a new job", "session", sess.String())
		r.s.emit(Event{Kind: EventRegistered, Job: r.name, Detail: sess.String()})
		r.s.alert.book.Set(r.name, r.s.alertPolicy(r.config().Config))
	} else {
		bound := r.s.startRetryBound()
		err := retryRegistration(ctx, r.log, bound, "registering the job", func() error {
			if err := r.loadConfig(ctx); err != nil {
				return err
			}
			// Under the session of now: a lost one is replaced.
			sess := r.rc.Session()
			joined, err := r.joinFresh(ctx)
			if err != nil || joined {
				if err == nil {
					err = r.registered(ctx, sess, true)
				}
				return err
			}
			// A shutdown flag is honoured by the running instance and cleared
			// by the next start (as in ElasticJob); paused and disabled persist.
			if err := r.rc.Delete(ctx, r.paths.Flag(r.serverID(), layout.Shutdown), -1); err != nil && !errors.Is(err, regcenter.ErrNoNode) {
				return fmt.Errorf("job %q: clear shutdown flag: %w", r.name, err)
			}
			return r.register(ctx, sess)
		})
		if err != nil {
			return err
		}
	}
	r.watchConfig(ctx)
	r.watchFlags(ctx)
	cfg := r.config()
	if cfg.Failover {
		r.watchQueue(ctx)
	}
	if r.preparesAtOnce(cfg) {
		if err := retryRegistration(ctx, r.log, r.s.startRetryBound(), "preparing the job", func() error { return r.prepare(ctx) }); err != nil {
			return err
		}
	}
	r.schedule()
	return nil
}

// treeOps are the operations that make a new job's tree: the job node,
// the config node (this instance's config), this server's node and status,
// and leader/sharding with the necessary flag. The failover queue and the
// election latch's parent are made on demand, by their first writer: ZooKeeper's
// cost of a new job is per node, and an idle job needs neither. They are
// in the tree only for a job that needs them at once: the queue with
// failover on, the latch's parent when this instance prepares at
// registration (see startRegistered).
func (r *runner) treeOps() ([]regcenter.Op, error) {
	cfg := r.config()
	// Add validated this config; encoding validates again, which for
	// thousands of jobs costs as much client CPU as the rest of
	// registering them.
	data, err := cfg.marshal()
	if err != nil {
		return nil, err
	}
	p, id := r.paths, r.serverID()
	ops := []regcenter.Op{
		regcenter.CreateOp{Path: p.Root()},
		regcenter.CreateOp{Path: p.Config(), Data: data},
		regcenter.CreateOp{Path: p.Servers()},
		regcenter.CreateOp{Path: p.Server(id), Data: []byte(hostname())},
		regcenter.CreateOp{Path: p.Flag(id, layout.Status), Data: []byte(layout.StatusReady), Mode: regcenter.Ephemeral},
		regcenter.CreateOp{Path: p.Leader()},
		regcenter.CreateOp{Path: p.ShardingEpoch()},
		regcenter.CreateOp{Path: p.Necessary()},
	}
	if cfg.Failover {
		ops = append(ops,
			regcenter.CreateOp{Path: path.Dir(p.FailoverItems())},
			regcenter.CreateOp{Path: p.FailoverItems()})
	}
	if r.preparesAtOnce(cfg) {
		ops = append(ops,
			regcenter.CreateOp{Path: path.Dir(p.ElectionLatch())},
			regcenter.CreateOp{Path: p.ElectionLatch()})
	}
	return ops, nil
}

// preparesAtOnce reports whether start prepares the job (see prepare).
func (r *runner) preparesAtOnce(cfg *spec) bool {
	return cfg.Failover || r.fireWithin(cfg, prepareAhead)
}

// hostname is what a server node holds.
var hostname = sync.OnceValue(func() string {
	h, _ := os.Hostname()
	return h
})

// createJob makes a new job's tree in one transaction (see createJobs).
func (r *runner) createJob(ctx context.Context) (bool, error) {
	made, err := createJobs(ctx, r.rc, []*runner{r})
	return made[r], err
}

// Trees of new jobs go into one transaction up to these bounds: the
// server's work per transaction, not per node, is most of a new job's cost.
const (
	treesPerTxn     = 32
	treeBytesPerTxn = 256 << 10
)

// createJobs makes the trees of new jobs, several to a transaction, and
// reports which it made. A job whose node exists already (or whose tree
// cannot go into a transaction: the namespace root is gone, or the config
// is too large) is left out, having changed nothing, and its start
// registers it node by node, which also creates whatever is missing.
func createJobs(ctx context.Context, rc regcenter.Center, rs []*runner) (map[*runner]bool, error) {
	made := map[*runner]bool{}
	type tree struct {
		r   *runner
		ops []regcenter.Op
	}
	var batch []tree
	size := 0
	flush := func() error {
		for len(batch) > 0 {
			var ops []regcenter.Op
			for _, t := range batch {
				ops = append(ops, t.ops...)
			}
			err := rc.Multi(ctx, ops...)
			if err == nil {
				for _, t := range batch {
					made[t.r] = true
				}
				break
			}
			var me *regcenter.MultiError
			switch {
			case errors.As(err, &me) && (errors.Is(me.Err, regcenter.ErrNodeExists) || errors.Is(me.Err, regcenter.ErrNoNode)):
				// Leave out the job whose op failed, and try the rest.
				at, n := 0, len(batch)
				for i, t := range batch {
					if at += len(t.ops); me.Index < at {
						batch = append(batch[:i:i], batch[i+1:]...)
						break
					}
				}
				if len(batch) == n {
					return fmt.Errorf("registering new jobs: %w", err)
				}
			case errors.Is(err, regcenter.ErrTooLarge) && len(batch) > 1:
				// One job's config is large: every job on its own.
				for _, t := range batch {
					if err := flushOne(ctx, rc, t.r, t.ops, made); err != nil {
						return err
					}
				}
				batch = nil
			case errors.Is(err, regcenter.ErrTooLarge):
				batch = nil
			default:
				return fmt.Errorf("registering new jobs: %w", err)
			}
		}
		batch, size = nil, 0
		return nil
	}
	for _, r := range rs {
		ops, err := r.treeOps()
		if err != nil {
			return made, fmt.Errorf("job %q: %w", r.name, err)
		}
		n := 0
		for _, op := range ops {
			if c, ok := op.(regcenter.CreateOp); ok {
				n += len(c.Data) + len(c.Path)
			}
		}
		if len(batch) > 0 && (len(batch) >= treesPerTxn || size+n > treeBytesPerTxn) {
			if err := flush(); err != nil {
				return made, err
			}
		}
		batch = append(batch, tree{r: r, ops: ops})
		size += n
	}
	return made, flush()
}

// flushOne makes one job's tree on its own (see createJobs).
func flushOne(ctx context.Context, rc regcenter.Center, r *runner, ops []regcenter.Op, made map[*runner]bool) error {
	err := rc.Multi(ctx, ops...)
	var me *regcenter.MultiError
	switch {
	case err == nil:
		made[r] = true
	case errors.As(err, &me) && (errors.Is(me.Err, regcenter.ErrNodeExists) || errors.Is(me.Err, regcenter.ErrNoNode)),
		errors.Is(err, regcenter.ErrTooLarge):
	default:
		return fmt.Errorf("job %q: register: %w", r.name, err)
	}
	return nil
}

// watchFlags watches this server's flags (paused, shutdown, trigger, and
// its status node). The children the watch was armed with are this
// instance's flags now: only a flag that asks for work makes it read them
// again (checkFlags).
func (r *runner) watchFlags(ctx context.Context) {
	st, cancel, err := r.rc.WatchNow(ctx, r.paths.Server(r.serverID()), regcenter.WatchChildren, func(regcenter.Event) {
		r.kick.flags.Kick()
	})
	r.keepWatch(&r.watch.flags, cancel)
	if err != nil {
		r.log.Debug("flags watch deferred; it reads the flags once armed", "err", err)
		return
	}
	kids := st.Children
	if slices.Contains(kids, layout.Shutdown) || slices.Contains(kids, layout.Trigger) || !slices.Contains(kids, layout.Status) {
		r.kick.flags.Kick()
		return
	}
	r.setPaused(slices.Contains(kids, layout.Paused))
}

// watchDisabledItems watches the disabled-items node and reads it when it
// exists. prep.mu is held (see prepare).
func (r *runner) watchDisabledItems(ctx context.Context) {
	if r.watch.armed(&r.watch.items) {
		return
	}
	st, cancel, err := r.rc.WatchNow(ctx, r.paths.DisabledItems(), regcenter.WatchNode, func(regcenter.Event) {
		r.kick.items.Kick()
	})
	r.keepWatch(&r.watch.items, cancel)
	if err != nil {
		r.log.Debug("disabled items watch deferred; it reads them once armed", "err", err)
		return
	}
	if st.Exists {
		r.readDisabledItems()
	}
}

// keepWatch stores a watch's cancel function in slot (one of r.watch's)
// for stop, or cancels it at once if stop has collected them already.
func (r *runner) keepWatch(slot *func(), cancel func()) { r.watch.keep(slot, cancel) }

// prepareAhead is how long before a job's next fire its instance joins the
// election and starts watching the job's disabled items (see prepare).
const prepareAhead = time.Minute

// register creates this instance's nodes under sess and, once the
// instance takes part in it (see prepare), joins the election.
func (r *runner) register(ctx context.Context, sess *regcenter.Session) error {
	host, _ := os.Hostname()
	if _, err := r.rc.Create(ctx, r.paths.Server(r.serverID()), []byte(host), regcenter.Persistent); err != nil && !errors.Is(err, regcenter.ErrNodeExists) {
		return fmt.Errorf("job %q: register server: %w", r.name, err)
	}
	if err := r.createStatus(ctx, sess); err != nil {
		return err
	}
	return r.registered(ctx, sess, false)
}

// joinFresh registers this server in an existing job it has never been
// part of, in one transaction: its server node and its status. It reports
// false, having changed nothing, when the server node exists (this server
// id ran the job before: register's path then clears its shutdown flag,
// finds its status and recovers what its previous life held). A server
// node made here has no children: no flag, no assignment, no status of
// another instance to wait for.
func (r *runner) joinFresh(ctx context.Context) (bool, error) {
	host, _ := os.Hostname()
	err := r.rc.Multi(ctx,
		regcenter.CreateOp{Path: r.paths.Server(r.serverID()), Data: []byte(host), Mode: regcenter.Persistent},
		regcenter.CreateOp{Path: r.paths.Flag(r.serverID(), layout.Status), Data: []byte(layout.StatusReady), Mode: regcenter.Ephemeral})
	var me *regcenter.MultiError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &me) && (errors.Is(me.Err, regcenter.ErrNodeExists) || errors.Is(me.Err, regcenter.ErrNoNode)):
		return false, nil // this server's node exists, or the job's servers node does not: node by node
	default:
		return false, fmt.Errorf("job %q: register server: %w", r.name, err)
	}
}

// registered finishes a registration whose server node and status exist
// under sess: the job's tree, the previous life's items (fresh: none),
// the reshard flag, the election.
func (r *runner) registered(ctx context.Context, sess *regcenter.Session, fresh bool) error {
	if err := r.ensureTree(ctx); err != nil {
		return fmt.Errorf("job %q: register: %w", r.name, err)
	}
	if !fresh {
		if err := r.recoverIncarnation(ctx); err != nil {
			r.log.Warn("recovering the previous run's items", "err", err)
		}
	}
	r.setNecessary(ctx)
	if err := r.campaignIfPrepared(ctx); err != nil {
		return err
	}
	r.book.Registered(sess)
	r.log.Info("registered", "session", sess.String())
	r.s.emit(Event{Kind: EventRegistered, Job: r.name, Detail: sess.String()})
	r.s.alert.book.Set(r.name, r.s.alertPolicy(r.config().Config))
	return nil
}

// ensureTree makes the leader's part of the job's tree that registration
// needs: leader/sharding (the parent of necessary) and, for a job with
// failover on, the failover queue. One read each when they exist. The
// election latch's parent is made by the first candidate (see prepare).
func (r *runner) ensureTree(ctx context.Context) error {
	if err := r.rc.EnsurePath(ctx, r.paths.ShardingEpoch()); err != nil {
		return err
	}
	if r.config().Failover {
		return r.rc.EnsurePath(ctx, r.paths.FailoverItems())
	}
	return nil
}

// recoverIncarnation handles the items a previous run of this server id
// held when it died: if that run's status vanished only now (we restarted
// within a session timeout), nobody noticed the departure and its
// assignment still stands. Items that did not complete the latest fire are
// owed a misfire run here, once this instance is registered.
func (r *runner) recoverIncarnation(ctx context.Context) error {
	data, _, err := r.rc.Get(ctx, r.paths.Flag(r.serverID(), layout.Sharding))
	if errors.Is(err, regcenter.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	items, err := layout.ParseItems(string(data))
	if err != nil || len(items) == 0 {
		return nil // garbage is replaced at the next reshard
	}
	cfg := r.config()
	sched, _, err := cfg.Schedule()
	if err != nil {
		return err
	}
	latest := fireplan.Prev(sched, r.s.opts.now())
	if latest.IsZero() {
		return nil
	}
	for _, it := range items {
		if it >= cfg.ShardingTotalCount {
			continue
		}
		done, err := r.completedFire(ctx, it)
		if err != nil {
			return err
		}
		if done.IsZero() || done.Before(latest) {
			since := latest
			if !done.IsZero() {
				if n := sched.Next(done); !n.IsZero() && n.Before(latest) {
					since = n
				}
			}
			// Owed from since through latest: a run that makes up for
			// only the start of it does not settle the rest.
			r.book.NoteMisfire(cfg.book, it, since)
			r.book.NoteMisfire(cfg.book, it, latest)
		}
	}
	return nil
}

// createStatus creates our ephemeral status node. If another session holds
// it, that is either our own previous life (a crash less than a session
// timeout ago), removed at once when the instance node proved that life
// over, or another live instance with the same server id, which the
// instance node normally refuses first: wait up to a session timeout for
// it to go, then give up with ErrServerIDInUse.
func (r *runner) createStatus(ctx context.Context, sess *regcenter.Session) error {
	p := r.paths.Flag(r.serverID(), layout.Status)
	gone := make(chan struct{}, 1)
	var cancelWatch func()
	defer func() {
		if cancelWatch != nil {
			cancelWatch()
		}
	}()
	deadline := time.NewTimer(r.sessionTimeout() + time.Second)
	defer deadline.Stop()
	for {
		_, err := r.rc.Create(ctx, p, []byte(layout.StatusReady), regcenter.Ephemeral)
		if err == nil {
			return nil
		}
		if !errors.Is(err, regcenter.ErrNodeExists) {
			return fmt.Errorf("job %q: register status: %w", r.name, err)
		}
		ok, st, err := r.rc.Exists(ctx, p)
		if err != nil {
			return fmt.Errorf("job %q: register status: %w", r.name, err)
		}
		if ok && st.EphemeralOwner == sess.ID() {
			return nil // ours already (same session, new generation)
		}
		if !ok {
			continue
		}
		if st.EphemeralOwner != 0 && st.EphemeralOwner == r.s.staleOwner.Load() {
			// Left by an earlier life of this id that is gone
			// (publishInstance proved it): no need to wait for its session
			// to expire.
			if err := r.rc.Delete(ctx, p, st.Version); err != nil && !errors.Is(err, regcenter.ErrNoNode) && !errors.Is(err, regcenter.ErrBadVersion) {
				return fmt.Errorf("job %q: register status: %w", r.name, err)
			}
			continue
		}
		if cancelWatch == nil {
			cancelWatch = r.rc.Watch(p, regcenter.WatchNode, func(ev regcenter.Event) {
				select {
				case gone <- struct{}{}:
				default:
				}
			})
		}
		select {
		case <-gone:
		case <-deadline.C:
			return fmt.Errorf("%w: job %q, server %q (session 0x%x holds %s); give each instance its own server id", ErrServerIDInUse, r.name, r.serverID(), st.EphemeralOwner, p)
		case <-ctx.Done():
			return fmt.Errorf("job %q: waiting for stale status %s: %w", r.name, p, ctx.Err())
		}
	}
}

// reregister runs after a new session: everything ephemeral is gone, so
// register again and resume (I3). Fires missed meanwhile run once.
func (r *runner) reregister(sess *regcenter.Session) {
	if r.book.Stopping() {
		return
	}
	backoff := 100 * time.Millisecond
	for sess.Err() == nil {
		ctx, cancel := context.WithTimeout(sess.Ctx(), r.sessionTimeout()+2*time.Second)
		err := r.restoreConfig(ctx)
		if err == nil {
			err = r.register(ctx, sess)
		}
		cancel()
		if err == nil {
			r.fireMissedWhileDown(sess)
			return
		}
		r.log.Warn("re-registration failed; retrying", "err", err, "in", backoff)
		select {
		case <-sess.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// watchCancels end the registration's watches. It owns its lock, taken
// only in this file.
type watchCancels struct {
	mu                          sync.Mutex
	closed                      bool // stop collected them (see close)
	config, flags, items, queue func()
}

// armed reports whether a watch is kept in slot, one of w's.
func (w *watchCancels) armed(slot *func()) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return *slot != nil
}

// keep stores a watch's cancel function in slot, one of w's, or cancels
// it at once if close has collected them already.
func (w *watchCancels) keep(slot *func(), cancel func()) {
	w.mu.Lock()
	closed := w.closed
	if !closed {
		*slot = cancel
	}
	w.mu.Unlock()
	if closed {
		cancel()
	}
}

// close returns the watches' cancel functions, for stop; a watch kept
// after it is cancelled at once.
func (w *watchCancels) close() []func() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	cancels := []func(){w.config, w.queue, w.flags, w.items}
	w.config, w.queue, w.flags, w.items = nil, nil, nil, nil
	return cancels
}
