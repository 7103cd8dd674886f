package job

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/registration"
	"github.com/shardjob/shardjob/regcenter"
)

// start registers the job under the current session, arms its watches
// and schedules it (registration.Registrar's Start). A new job's tree is
// one transaction (createJob); a job that exists already is registered
// node by node.
func (r *runner) start(ctx context.Context) error { return r.registrar().Start(ctx) }

// startRegistered finishes start (registration.Registrar's Started):
// created says that the job's tree was just made under sess. Joining the
// election and watching the disabled items wait until the job may run
// something (see prepare), unless that is soon or the job has failover
// on.
func (r *runner) startRegistered(ctx context.Context, sess *regcenter.Session, created bool) error {
	return r.registrar().Started(ctx, sess, created)
}

// arm arms the job's watches: its config node, this server's flags, and
// the failover queue if the job has failover on. It reports whether the
// job prepares at once (preparesAtOnce), by the same config.
func (r *runner) arm(ctx context.Context) bool {
	r.watchConfig(ctx)
	r.watchFlags(ctx)
	cfg := r.config()
	if cfg.Failover {
		r.watchQueue(ctx)
	}
	return preparesAtOnce(cfg, r.fireWithin(cfg, prepareAhead))
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

// registrar registers the job node by node, and again after a new
// session (job/internal/registration's Registrar), with what the steps do
// here.
func (r *runner) registrar() *registration.Registrar {
	return &registration.Registrar{Node: r.node(), Session: r.rc.Session, Bound: r.s.startRetryBound,
		LoadConfig: r.loadConfig, RestoreConfig: r.restoreConfig, Adopt: r.adoptConfig, Failover: func() bool { return r.config().Failover },
		Recover: r.recoverIncarnation, Necessary: r.setNecessary, Campaign: r.prep.CampaignAgain, Sweep: r.sweepEnded,
		Registered: r.noteRegistered, Create: r.createJob, Arm: r.arm, Prepare: r.prepare, Schedule: r.schedule}
}

// noteRegistered tells the job's book, log, events and alerts that it is
// registered under sess, in a tree just created or not.
func (r *runner) noteRegistered(sess *regcenter.Session, created bool) {
	msg := "registered"
	if created {
		msg = "registered a new job"
	}
	r.book.Registered(sess)
	r.log.Info(msg, "session", sess.String())
	r.s.emit(Event{Kind: EventRegistered, Job: r.name, Detail: sess.String()})
	r.s.alert.book.Set(r.name, r.s.alertPolicy(r.config().Config))
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
	soon := r.fireWithin(cfg, prepareAhead)
	tree := registration.Tree{
		Paths: r.paths, Server: r.serverID(), Host: registration.Hostname(), Config: data,
		Failover: cfg.Failover, Prepares: preparesAtOnce(cfg, soon),
	}
	if soon && !cfg.Unmonitored && cfg.ShardingTotalCount <= registration.TreeItems {
		// Its first fires mark every item (an unmonitored job marks none):
		// each instance's first mark finds the nodes made.
		tree.Items = cfg.ShardingTotalCount
	}
	return registration.TreeOps(tree), nil
}

// preparesAtOnce reports whether start prepares the job (see prepare),
// soon being whether it fires within prepareAhead: the caller works that
// out once, for a new job's tree uses it too.
func preparesAtOnce(cfg *spec, soon bool) bool {
	return cfg.Failover || soon
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

// joinJobs joins this instance to the jobs of rs, which exist already,
// several to a read and a transaction (registration.JoinMany), and
// returns, for each job it joined, the rest of its start
// (registration.Registrar's StartJoined). A job left out has changed
// nothing, and its start registers it node by node; so has every job
// not joined when the batch fails, the error logged.
func joinJobs(ctx context.Context, rc regcenter.Center, rs []*runner, log *slog.Logger) map[*runner]func(context.Context) error {
	gs := make([]*registration.Registrar, len(rs))
	for i, r := range rs {
		gs[i] = r.registrar()
	}
	joined, err := registration.JoinMany(ctx, rc, gs)
	if err != nil {
		log.Debug("joining existing jobs in a batch; the rest join one by one", "err", err)
	}
	out := map[*runner]func(context.Context) error{}
	for i, j := range joined {
		if j != nil {
			out[rs[i]] = func(ctx context.Context) error { return gs[i].StartJoined(ctx, j) }
		}
	}
	return out
}

// adoptConfig makes the local config agree with the config node's
// document stored, read in bulk (confignode.Node.Adopt): it returns our
// config to write over it with Overwrite, else uses the stored one if it
// decodes.
func (r *runner) adoptConfig(ctx context.Context, stored []byte) ([]byte, error) {
	cfg, use, write, err := r.cfgNode.Adopt(ctx, r.config().Overwrite, stored)
	if use {
		r.setConfig(cfg)
	}
	return write, err
}

// watchFlags watches this server's flags (paused, shutdown, trigger, and
// its status node; registration.Watches.ArmFlags): only a flag that asks
// for work makes it read them again (checkFlags); the pause flag is
// noted as armed.
func (r *runner) watchFlags(ctx context.Context) {
	if paused, settled := r.watch.ArmFlags(ctx, r.rc, r.paths.Server(r.serverID()), func() { r.kick.Kick(kickFlags) }, r.log); settled {
		r.setPaused(paused)
	}
}

// watchDisabledItems watches the disabled-items node and reads it when it
// exists (registration.Watches.ArmItems). The preparation's lock is held
// (see prepare).
func (r *runner) watchDisabledItems(ctx context.Context) {
	if r.watch.ArmItems(ctx, r.rc, r.paths.DisabledItems(), func() { r.kick.Kick(kickItems) }, r.log) {
		r.readDisabledItems()
	}
}

// prepareAhead is how long before a job's next fire its instance joins the
// election and starts watching the job's disabled items (see prepare).
const prepareAhead = time.Minute

// recoverIncarnation handles previous, the items a previous run of this
// server id held when it died: if that run's status vanished only now (we
// restarted within a session timeout), nobody noticed the departure and
// its assignment still stands. Items that did not complete the latest fire
// are owed a misfire run here, once this instance is registered.
func (r *runner) recoverIncarnation(ctx context.Context, previous []int) error {
	cfg := r.config()
	debts, err := registration.Debts(ctx, previous, cfg.ShardingTotalCount, func() (fireplan.Schedule, error) {
		sched, _, err := cfg.Schedule()
		return sched, err
	}, r.s.opts.now, r.completedFire)
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
	if r.registrar().Reregister(sess) {
		r.fireMissedWhileDown(sess)
	}
}

// watchCancels end the registration's watches (registration.Watches),
// each kept in its slot.
type watchCancels = registration.Watches

// treesPerTxn is the most new jobs' trees in one transaction (Start's
// chunks).
const treesPerTxn = registration.TreesPerTxn
