package job

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/registration"
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
			joined, err := r.node().JoinFresh(ctx)
			if err != nil || joined {
				if err == nil {
					err = r.registered(ctx, sess, true)
				}
				return err
			}
			if err := r.node().ClearShutdown(ctx); err != nil {
				return err
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

// node is the job's registration on this instance, node by node
// (job/internal/registration).
func (r *runner) node() *registration.Node {
	return &registration.Node{
		RC: r.rc, Paths: r.paths, Job: r.name, Server: r.serverID(),
		SessionTimeout: r.sessionTimeout, StaleOwner: r.s.inst.StaleOwner,
		InUse: ErrServerIDInUse, Log: r.log,
	}
}

// treeOps are the operations that make a new job's tree
// (registration.TreeOps), with this instance's config; the failover queue
// and the election latch's parent are in it for a job that needs them at
// once (see startRegistered).
func (r *runner) treeOps() ([]regcenter.Op, error) {
	cfg := r.config()
	// Add validated this config; encoding validates again, which for
	// thousands of jobs costs as much client CPU as the rest of
	// registering them.
	data, err := cfg.marshal()
	if err != nil {
		return nil, err
	}
	return registration.TreeOps(registration.Tree{
		Paths: r.paths, Server: r.serverID(), Host: registration.Hostname(), Config: data,
		Failover: cfg.Failover, Prepares: r.preparesAtOnce(cfg),
	}), nil
}

// preparesAtOnce reports whether start prepares the job (see prepare).
func (r *runner) preparesAtOnce(cfg *spec) bool {
	return cfg.Failover || r.fireWithin(cfg, prepareAhead)
}

// createJob makes a new job's tree in one transaction (see createJobs).
func (r *runner) createJob(ctx context.Context) (bool, error) {
	made, err := createJobs(ctx, r.rc, []*runner{r})
	return made[r], err
}

// createJobs makes the trees of new jobs, several to a transaction
// (registration.CreateTrees), and reports which it made. A job left out
// has changed nothing, and its start registers it node by node.
func createJobs(ctx context.Context, rc regcenter.Center, rs []*runner) (map[*runner]bool, error) {
	made, err := registration.CreateTrees(ctx, rc, len(rs), func(i int) ([]regcenter.Op, error) {
		ops, err := rs[i].treeOps()
		if err != nil {
			return nil, fmt.Errorf("job %q: %w", rs[i].name, err)
		}
		return ops, nil
	}, func(i int) string { return rs[i].name })
	out := map[*runner]bool{}
	for i, ok := range made {
		if ok {
			out[rs[i]] = true
		}
	}
	return out, err
}

// watchFlags watches this server's flags (paused, shutdown, trigger, and
// its status node). The children the watch was armed with are this
// instance's flags now: only a flag that asks for work makes it read them
// again (checkFlags).
func (r *runner) watchFlags(ctx context.Context) {
	st, cancel, err := r.rc.WatchNow(ctx, r.paths.Server(r.serverID()), regcenter.WatchChildren, func(regcenter.Event) {
		r.kick.flags.Kick()
	})
	r.keepWatch(watchFlags, cancel)
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
// exists. The preparation's lock is held (see prepare).
func (r *runner) watchDisabledItems(ctx context.Context) {
	if r.watch.Armed(watchItems) {
		return
	}
	st, cancel, err := r.rc.WatchNow(ctx, r.paths.DisabledItems(), regcenter.WatchNode, func(regcenter.Event) {
		r.kick.items.Kick()
	})
	r.keepWatch(watchItems, cancel)
	if err != nil {
		r.log.Debug("disabled items watch deferred; it reads them once armed", "err", err)
		return
	}
	if st.Exists {
		r.readDisabledItems()
	}
}

// keepWatch stores a watch's cancel function in slot of r.watch for
// stop, or cancels it at once if stop has collected them already.
func (r *runner) keepWatch(slot registration.Slot, cancel func()) { r.watch.Keep(slot, cancel) }

// prepareAhead is how long before a job's next fire its instance joins the
// election and starts watching the job's disabled items (see prepare).
const prepareAhead = time.Minute

// register creates this instance's nodes under sess and, once the
// instance takes part in it (see prepare), joins the election.
func (r *runner) register(ctx context.Context, sess *regcenter.Session) error {
	n := r.node()
	if err := n.CreateServer(ctx); err != nil {
		return err
	}
	if err := n.CreateStatus(ctx, sess); err != nil {
		return err
	}
	return r.registered(ctx, sess, false)
}

// registered finishes a registration whose server node and status exist
// under sess: the job's tree, the previous life's items (fresh: none),
// the reshard flag, the election.
func (r *runner) registered(ctx context.Context, sess *regcenter.Session, fresh bool) error {
	if err := r.node().EnsureTree(ctx, r.config().Failover); err != nil {
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

// recoverIncarnation handles the items a previous run of this server id
// held when it died: if that run's status vanished only now (we restarted
// within a session timeout), nobody noticed the departure and its
// assignment still stands. Items that did not complete the latest fire are
// owed a misfire run here, once this instance is registered.
func (r *runner) recoverIncarnation(ctx context.Context) error {
	items, err := r.node().PreviousItems(ctx)
	if err != nil || len(items) == 0 {
		return err
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
	debts, err := registration.Owed(ctx, items, cfg.ShardingTotalCount, sched, latest, r.completedFire)
	for _, d := range debts {
		r.book.NoteMisfire(cfg.book, d.Item, d.Since)
		r.book.NoteMisfire(cfg.book, d.Item, d.Latest)
	}
	return err
}

// reregister runs after a new session: everything ephemeral is gone, so
// register again and resume (I3). Fires missed meanwhile run once.
func (r *runner) reregister(sess *regcenter.Session) {
	if r.book.Stopping() {
		return
	}
	if r.node().Reregister(sess, func(ctx context.Context) error {
		if err := r.restoreConfig(ctx); err != nil {
			return err
		}
		return r.register(ctx, sess)
	}) {
		r.fireMissedWhileDown(sess)
	}
}

// watchCancels end the registration's watches (registration.Watches),
// each kept in its slot.
type watchCancels = registration.Watches

// The slots of the registration's watches, and the most new jobs' trees
// in one transaction (Start's chunks).
const (
	watchConfig = registration.WatchConfig
	watchFlags  = registration.WatchFlags
	watchItems  = registration.WatchItems
	watchQueue  = registration.WatchQueue
	treesPerTxn = registration.TreesPerTxn
)
