package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/election"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/listener"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/sharding"
)

// runner is one job on one instance: its registration, its fires and its
// leader duties. Its goroutines are started through goFunc and all end
// before stop returns (unless a job ignores its context).
type runner struct {
	s     *Scheduler
	name  string
	job   Job
	paths layout.Job
	log   *slog.Logger
	rc    regcenter.Center

	cfg   atomic.Pointer[Config]
	elect *election.Election

	mu            sync.Mutex
	closed        bool // no new goroutines
	stopping      bool // no new fires
	regSess       *regcenter.Session
	running       map[int]*execution
	misfires      map[int]time.Time // items owed a misfire run: earliest missed fire
	misfireLast   map[int]time.Time // and the latest one
	misfireNodes  map[int]bool      // we wrote execution/{item}/misfire
	completedSeen map[int]bool      // execution/{item}/completed exists
	covered       map[int]record    // items' records as last written or read here
	remoteWaits   map[int]func()    // watches on items running elsewhere
	missed        time.Time         // earliest fire skipped while suspended
	leaderWatches map[string]func()
	claimWatches  map[string]func() // claim or running nodes whose end re-scans the queue
	claimBlocked  map[int]bool      // failover items running elsewhere: not claimed until they end
	goneWaiters   map[string][]int  // blocked items, by the node whose end unblocks them
	claims        map[int]int32     // failover items claimed here: the queue entry's version
	dispatched    map[int]time.Time // latest scheduled fire each item was run or owed at here
	heldAtLeave   []int             // the assignment this instance gave up when it left
	lastHeld      assigned          // the assignment of the latest scheduled fire here
	firing        sync.WaitGroup    // scheduled fires in flight
	// order makes scheduled fires reserve their items in fire order: a fire
	// held up in coordination (a slow ZooKeeper, a reshard) would otherwise
	// find its item taken by the next fire, owe a run, and its make-up run
	// would run that next fire again.
	order         sync.Mutex
	queueCancel   func()
	queueDirty    bool // the failover queue may hold items
	flagsCancel   func()
	itemsCancel   func()
	paused        bool         // servers/{me}/paused exists
	disabledItems map[int]bool // items kept out of every fire
	triggerQueued bool         // a trigger arrived while items ran
	removed       bool         // the job was removed from the cluster
	lastSharded   []string
	reshardSem    chan struct{} // held while this instance reshards
	leaderGen     chan struct{} // closed and replaced when leadership changes
	configCancel  func()

	lifeCtx    context.Context // cancelled when stop begins: ends coordination waits
	lifeCancel context.CancelFunc
	execCtx    context.Context // cancelled when shutdown's grace period ends
	execCancel context.CancelCauseFunc
	// recordCtx is cancelled when stop has waited its last for background
	// work: completions (including the hand-over of items cut short) are
	// written until then.
	recordCtx    context.Context
	recordCancel context.CancelFunc
	wg           sync.WaitGroup
	membership   *kicker
	assumed      assigned // what the next fire may assume; under mu
	failoverKick *kicker
	flagsKick    *kicker
	reshardKick  *kicker
	epochKick    *kicker
	itemsKick    *kicker
	idle         chan struct{} // closed and replaced whenever items are released
}

type execution struct {
	item int
	fire time.Time
	// through is the latest fire the execution stands for, fixed when the
	// item is reserved: a scheduled fire reserved later finds it covered.
	through time.Time
	kind    Kind
	cancel  context.CancelCauseFunc
}

// standsFor reports whether the execution holding an item already makes up
// for the fire at: a fire that finds its item so busy owes nothing.
func (e *execution) standsFor(at time.Time) bool {
	return !e.through.IsZero() && !e.through.Before(at) && !e.fire.After(at)
}

// makeUpThrough is the latest fire a make-up run since since, reserved now,
// stands for.
func (r *runner) makeUpThrough(cfg Config, since time.Time) time.Time {
	if sched, _, err := cfg.Schedule(); err == nil {
		if p := prevFire(sched, r.s.opts.now()); p.After(since) {
			return p
		}
	}
	return since
}

// Node payloads. JSON so that operators and the CLI can read them.
type runningMark struct {
	Server  string `json:"server"`
	Fire    int64  `json:"fire"`
	Kind    Kind   `json:"kind"`
	Begin   int64  `json:"begin"`
	Session string `json:"session"`
}

// completedMark records the latest fire an item's executions cover. A
// misfire or failover run that began at B makes up for every fire from Since
// to the last fire at or before B; Fire is that last fire.
type completedMark struct {
	Server string `json:"server"`
	Fire   int64  `json:"fire"`
	Since  int64  `json:"since,omitempty"`
	// Ran lists the runs of consecutive fires known to have been covered,
	// oldest first, each as [first, last] (see cover): this execution's and
	// what earlier records said. A make-up run runs only fires it does not
	// list.
	Ran [][2]int64 `json:"ran,omitempty"`
	// Floor is read from records written before Ran existed: every fire
	// from Floor through Fire had run.
	Floor int64  `json:"floor,omitempty"`
	Kind  Kind   `json:"kind"`
	Begin int64  `json:"begin"`
	End   int64  `json:"end"`
	Error string `json:"error,omitempty"`
}

type misfireMark struct {
	Since int64 `json:"since"`
}

func newRunner(s *Scheduler, cfg Config, j Job) *runner {
	r := &runner{
		s: s, name: cfg.Name, job: j, paths: layout.Job(cfg.Name), rc: s.rc,
		log:           s.log.With("job", cfg.Name),
		running:       map[int]*execution{},
		misfires:      map[int]time.Time{},
		misfireLast:   map[int]time.Time{},
		misfireNodes:  map[int]bool{},
		completedSeen: map[int]bool{},
		covered:       map[int]record{},
		remoteWaits:   map[int]func(){},
		leaderWatches: map[string]func(){},
		claimWatches:  map[string]func(){},
		claimBlocked:  map[int]bool{},
		goneWaiters:   map[string][]int{},
		claims:        map[int]int32{},
		dispatched:    map[int]time.Time{},
		idle:          make(chan struct{}),
		leaderGen:     make(chan struct{}),
		reshardSem:    make(chan struct{}, 1),
	}
	r.cfg.Store(&cfg)
	r.execCtx, r.execCancel = context.WithCancelCause(context.Background())
	r.recordCtx, r.recordCancel = context.WithCancel(context.Background())
	r.lifeCtx, r.lifeCancel = context.WithCancel(context.Background())
	r.elect = election.New(s.rc, r.paths.ElectionLatch(), r.paths.ElectionHost(), s.opts.serverID, election.Callbacks{
		OnElected: r.onElected,
		OnRevoked: r.onRevoked,
	}, r.log)
	r.membership = newKicker(r.goFunc, r.checkMembership)
	r.failoverKick = newKicker(r.goFunc, r.claimFailover)
	r.flagsKick = newKicker(r.goFunc, r.checkFlags)
	r.reshardKick = newKicker(r.goFunc, r.reshardOnRequest)
	r.epochKick = newKicker(r.goFunc, r.noteEpochFlag)
	r.itemsKick = newKicker(r.goFunc, r.readDisabledItems)
	return r
}

func (r *runner) config() Config { return *r.cfg.Load() }

// goFire runs the scheduled fire at on a goroutine owned by the runner;
// stop waits for fires in flight before it hands over what they owe.
func (r *runner) goFire(at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.stopping {
		// Stopping: the leave hands this fire's items over (see leave),
		// and no fire may join the wait group stop waits on.
		return
	}
	r.wg.Add(1)
	r.firing.Add(1)
	go func() {
		defer r.wg.Done()
		defer r.firing.Done()
		r.fire(at)
	}()
}

// goFunc runs f on a goroutine owned by the runner; after stop begins
// closing, f is dropped and goFunc returns false.
func (r *runner) goFunc(f func()) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		f()
	}()
	return true
}

func (r *runner) serverID() string { return r.s.opts.serverID }

// start reconciles the configuration, registers under the current session
// and schedules the job.
func (r *runner) start(ctx context.Context) error {
	if err := r.loadConfig(ctx); err != nil {
		return err
	}
	// A shutdown flag is honoured by the running instance and cleared by
	// the next start (as in ElasticJob); paused and disabled persist.
	if err := r.rc.Delete(ctx, r.paths.Flag(r.serverID(), layout.Shutdown), -1); err != nil && !errors.Is(err, regcenter.ErrNoNode) {
		return fmt.Errorf("job %q: clear shutdown flag: %w", r.name, err)
	}
	sess := r.rc.Session()
	if err := r.register(ctx, sess); err != nil {
		return err
	}
	r.configCancel = r.rc.Watch(r.paths.Config(), regcenter.WatchNode, func(ev regcenter.Event) {
		switch ev.Type {
		case regcenter.EventDataChanged, regcenter.EventCreated:
			r.goFunc(r.reloadConfig)
		case regcenter.EventDeleted:
			// The job was removed from the cluster: stop here.
			r.goFunc(func() { r.s.removeRemoved(r) })
		}
	})
	r.flagsCancel = r.rc.Watch(r.paths.Server(r.serverID()), regcenter.WatchChildren, func(regcenter.Event) {
		r.flagsKick.kick()
	})
	r.itemsCancel = r.rc.Watch(r.paths.DisabledItems(), regcenter.WatchNode, func(regcenter.Event) {
		r.itemsKick.kick()
	})
	// Every instance watches the failover queue (cheap: one watch per job);
	// only jobs with failover on act on it.
	r.queueCancel = r.rc.Watch(r.paths.FailoverItems(), regcenter.WatchChildren, func(regcenter.Event) {
		r.mu.Lock()
		r.queueDirty = true
		r.mu.Unlock()
		r.failoverKick.kick()
	})
	r.schedule()
	return nil
}

func (r *runner) schedule() {
	cfg := r.config()
	if cfg.Disabled {
		r.s.trig.remove(r.name)
		return
	}
	sched, _, err := cfg.Schedule()
	if err != nil { // validated before; defensive
		r.log.Error("cannot schedule", "err", err)
		return
	}
	r.s.trig.set(r.name, sched)
}

// loadConfig makes the config node and the local config agree: Overwrite
// writes ours; otherwise a valid stored config wins.
func (r *runner) loadConfig(ctx context.Context) error {
	local := r.config()
	data, err := local.Encode()
	if err != nil {
		return err
	}
	if local.Overwrite {
		_, err := r.rc.Set(ctx, r.paths.Config(), data, -1)
		if errors.Is(err, regcenter.ErrNoNode) {
			_, err = r.rc.Create(ctx, r.paths.Config(), data, regcenter.Persistent)
			if errors.Is(err, regcenter.ErrNodeExists) {
				_, err = r.rc.Set(ctx, r.paths.Config(), data, -1)
			}
		}
		if err != nil {
			return fmt.Errorf("job %q: write config: %w", r.name, err)
		}
		return nil
	}
	stored, _, err := r.rc.Get(ctx, r.paths.Config())
	if errors.Is(err, regcenter.ErrNoNode) {
		_, err = r.rc.Create(ctx, r.paths.Config(), data, regcenter.Persistent)
		if err == nil {
			return nil
		}
		if !errors.Is(err, regcenter.ErrNodeExists) {
			return fmt.Errorf("job %q: write config: %w", r.name, err)
		}
		stored, _, err = r.rc.Get(ctx, r.paths.Config())
	}
	if err != nil {
		return fmt.Errorf("job %q: read config: %w", r.name, err)
	}
	cfg, err := r.decodeStored(ctx, stored)
	if err != nil {
		r.log.Error("stored config is invalid; using this instance's config", "err", err)
		return nil
	}
	r.cfg.Store(&cfg)
	return nil
}

func (r *runner) decodeStored(ctx context.Context, data []byte) (Config, error) {
	cfg, err := DecodeConfigContext(ctx, data)
	if err != nil {
		return Config{}, err
	}
	if cfg.Name != r.name {
		return Config{}, fmt.Errorf("%w: config node of job %q names job %q", ErrInvalidConfig, r.name, cfg.Name)
	}
	cfg = cfg.WithDefaults()
	if _, err := sharding.Lookup(cfg.ShardingStrategy); err != nil {
		return Config{}, fmt.Errorf("%w: job %q: %w", ErrInvalidConfig, r.name, err)
	}
	return cfg, nil
}

// reloadConfig applies a changed config node; garbage is refused and the
// last good config stays in force.
func (r *runner) reloadConfig() {
	ctx, cancel := context.WithTimeout(r.rc.Session().Ctx(), r.s.opts.reshardTimeout)
	defer cancel()
	data, _, err := r.rc.Get(ctx, r.paths.Config())
	if err != nil {
		if !errors.Is(err, regcenter.ErrNoNode) {
			r.log.Warn("reading changed config", "err", err)
		}
		return
	}
	cfg, err := r.decodeStored(ctx, data)
	if err != nil {
		r.log.Error("config node rejected; last good config stays in force", "err", err)
		return
	}
	old := r.config()
	if cfg == old {
		return
	}
	r.cfg.Store(&cfg)
	r.log.Info("config changed", "cron", cfg.Cron, "items", cfg.ShardingTotalCount)
	if cfg.Cron != old.Cron || cfg.TimeZone != old.TimeZone || cfg.Disabled != old.Disabled {
		r.mu.Lock()
		stopping := r.stopping
		r.mu.Unlock()
		if !stopping {
			r.schedule()
		}
	}
	if cfg.ShardingTotalCount != old.ShardingTotalCount || cfg.ShardingStrategy != old.ShardingStrategy {
		r.setNecessary(ctx)
	}
}

// register creates this instance's nodes under sess and joins the election.
func (r *runner) register(ctx context.Context, sess *regcenter.Session) error {
	host, _ := os.Hostname()
	if _, err := r.rc.Create(ctx, r.paths.Server(r.serverID()), []byte(host), regcenter.Persistent); err != nil && !errors.Is(err, regcenter.ErrNodeExists) {
		return fmt.Errorf("job %q: register server: %w", r.name, err)
	}
	if err := r.createStatus(ctx, sess); err != nil {
		return err
	}
	if err := r.ensureTree(ctx); err != nil {
		return fmt.Errorf("job %q: register: %w", r.name, err)
	}
	if err := r.recoverIncarnation(ctx); err != nil {
		r.log.Warn("recovering the previous run's items", "err", err)
	}
	r.setNecessary(ctx)
	if err := r.elect.Campaign(ctx); err != nil {
		return fmt.Errorf("job %q: %w", r.name, err)
	}
	r.mu.Lock()
	r.regSess = sess
	r.mu.Unlock()
	r.log.Info("registered", "session", sess.String())
	return nil
}

// ensureTree makes the leader's part of the job's tree: leader/sharding
// (the parent of necessary), the failover queue and the election latch. One
// read when it exists, one transaction for a new job; the slow way, a node
// at a time, when another instance is making it at the same moment.
func (r *runner) ensureTree(ctx context.Context) error {
	ok, _, err := r.rc.Exists(ctx, r.paths.FailoverItems())
	if err != nil {
		return err
	}
	if ok {
		return r.rc.EnsurePath(ctx, r.paths.ShardingEpoch())
	}
	leader := r.paths.Leader()
	var ops []regcenter.Op
	for _, p := range []string{leader, r.paths.ShardingEpoch(), path.Dir(r.paths.FailoverItems()), r.paths.FailoverItems(), path.Dir(r.paths.ElectionLatch()), r.paths.ElectionLatch()} {
		ops = append(ops, regcenter.CreateOp{Path: p})
	}
	if err := r.rc.Multi(ctx, ops...); err == nil {
		return nil
	}
	for _, p := range []string{r.paths.ShardingEpoch(), r.paths.FailoverItems(), r.paths.ElectionLatch()} {
		if err := r.rc.EnsurePath(ctx, p); err != nil {
			return err
		}
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
	latest := prevFire(sched, r.s.opts.now())
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
			r.noteMisfire(it, since, cfg)
			r.noteMisfire(it, latest, cfg)
		}
	}
	return nil
}

// createStatus creates our ephemeral status node. If another session holds
// it, that is either our own previous life (a crash less than a session
// timeout ago) or another live instance with the same server id: wait up to
// a session timeout for it to go, then give up with ErrServerIDInUse.
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

func (r *runner) sessionTimeout() time.Duration {
	if z, ok := r.rc.(interface{ SessionTimeout() time.Duration }); ok {
		return z.SessionTimeout()
	}
	return regcenter.DefaultSessionTimeout
}

// setNecessary flags a reshard. It never creates parent nodes: after the
// job was removed from the cluster a late flag must not bring its tree back
// (registration creates the parents).
func (r *runner) setNecessary(ctx context.Context) {
	err := r.rc.Multi(ctx, r.paths.FlagReshardOps()...)
	if err == nil || errors.Is(err, regcenter.ErrNodeExists) || errors.Is(err, regcenter.ErrNoNode) || ctx.Err() != nil {
		return
	}
	r.log.Warn("cannot flag resharding", "err", err)
}

// reregister runs after a new session: everything ephemeral is gone, so
// register again and resume (I3). Fires missed meanwhile run once.
func (r *runner) reregister(sess *regcenter.Session) {
	r.mu.Lock()
	if r.stopping {
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	backoff := 100 * time.Millisecond
	for sess.Err() == nil {
		ctx, cancel := context.WithTimeout(sess.Ctx(), r.sessionTimeout()+2*time.Second)
		err := r.restoreConfig(ctx)
		if err == nil {
			err = r.register(ctx, sess)
		}
		cancel()
		if err == nil {
			r.runMissed(sess)
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

// restoreConfig writes this instance's config to the config node when the
// node is gone at re-registration: ZooKeeper lost its data (a wiped
// ensemble comes back empty), and the cluster's truth is what its instances
// still hold. A job removed on purpose never gets here: its instances saw
// the config node's deletion and stopped.
func (r *runner) restoreConfig(ctx context.Context) error {
	ok, _, err := r.rc.Exists(ctx, r.paths.Config())
	if err != nil || ok {
		return err
	}
	data, err := r.config().Encode()
	if err != nil {
		return err
	}
	_, err = r.rc.Create(ctx, r.paths.Config(), data, regcenter.Persistent)
	if errors.Is(err, regcenter.ErrNodeExists) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("job %q: restore config node: %w", r.name, err)
	}
	r.log.Warn("config node was missing at re-registration (zookeeper lost its data?); restored it from this instance's config")
	return nil
}

func (r *runner) noteSuspendedMiss(at time.Time) {
	r.mu.Lock()
	if r.missed.IsZero() || at.Before(r.missed) {
		r.missed = at
	}
	r.mu.Unlock()
}

// runMissed runs once, for this instance's items, the fires skipped while the
// connection was down.
func (r *runner) runMissed(sess *regcenter.Session) {
	at := r.takeMissed()
	if at.IsZero() {
		return
	}
	r.log.Info("running fires missed while disconnected", "since", at)
	r.fireAs(sess, at, KindMisfire, nil)
}

// readyToFire returns the session to fire under, or false when this
// instance must not fire now.
func (r *runner) readyToFire() (*regcenter.Session, bool) {
	sess := r.rc.Session()
	r.mu.Lock()
	reg, stopping := r.regSess, r.stopping
	r.mu.Unlock()
	if stopping {
		return nil, false
	}
	if reg != sess || sess.Check() != nil || r.s.suspended.Load() {
		return nil, false
	}
	return sess, true
}

// fire is one fire of the schedule.
func (r *runner) fire(at time.Time) {
	r.mu.Lock()
	paused := r.paused
	r.mu.Unlock()
	if paused {
		return // an operator paused this server: its items stay put
	}
	if err := r.s.clockError(r.config().MaxTimeDiff); err != nil {
		r.log.Error("fire refused", "fire", at, "err", err)
		return
	}
	r.order.Lock()
	reserved := sync.OnceFunc(r.order.Unlock)
	defer reserved()
	sess, ok := r.readyToFire()
	if !ok {
		r.mu.Lock()
		stopping := r.stopping
		r.mu.Unlock()
		if !stopping {
			r.log.Warn("fire skipped: not connected to zookeeper; it will run once reconnected", "fire", at)
			r.noteSuspendedMiss(at)
		}
		return
	}
	if missed := r.takeMissed(); !missed.IsZero() {
		// Fires skipped earlier (an assignment that could not be read)
		// are made up now, with this one.
		r.log.Info("making up for fires skipped earlier", "since", missed, "fire", at)
		r.fireAs(sess, missed, KindMisfire, reserved)
		return
	}
	r.fireAs(sess, at, KindFire, reserved)
}

// takeMissed returns and clears the earliest fire skipped here.
func (r *runner) takeMissed() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	at := r.missed
	r.missed = time.Time{}
	return at
}

// reserved, when not nil, is called once this fire's items are reserved
// (or it reserves none).
func (r *runner) fireAs(sess *regcenter.Session, at time.Time, kind Kind, reserved func()) {
	if reserved == nil {
		reserved = func() {}
	}
	if kind == KindFire {
		// Steady state: fire on what the previous fire read, proved by
		// this fire's own transaction; read again only if that fails.
		// A failed proof leaves nothing behind (see fireItems), and this
		// fire still holds the fire order for the fresh read.
		if a, ok := r.cachedAssignment(sess); ok {
			err := r.fireItems(sess, at, a, reserved, true)
			if err == nil {
				r.runMisfires(sess)
				return
			}
			if !errors.Is(err, errAssignmentMoved) {
				r.log.Warn("fire skipped: cannot prove assignment; the next fire makes up for it", "fire", at, "err", err)
				r.noteSuspendedMiss(at)
				return
			}
		}
	}
	a, err := r.assignment(sess)
	if err != nil {
		r.log.Warn("fire skipped: cannot read assignment; the next fire makes up for it", "fire", at, "err", err)
		r.noteSuspendedMiss(at)
		return
	}
	items := a.items
	if kind == KindFire {
		_ = r.fireItems(sess, at, a, reserved, false) // unproved, it returns nil
		r.runMisfires(sess)
		return
	}
	if kind == KindMisfire {
		// Fires missed while disconnected, since at and through the latest.
		through := at
		if sched, _, err := r.config().Schedule(); err == nil {
			if p := prevFire(sched, r.s.opts.now()); p.After(at) {
				through = p
			}
		}
		cfg := r.config()
		todo := r.reserve(items, at, through, KindMisfire, cfg)
		reserved()
		r.run(sess, cfg, at, todo, KindMisfire)
	} else {
		r.execute(sess, at, items, kind)
	}
	r.runMisfires(sess)
}

// fireItems runs a scheduled fire's items. An item that owes earlier fires
// — fires its previous owner did not complete, or a debt of this instance —
// runs as a make-up run since the earliest of them, through this fire: run
// as a plain fire, its completion would record this fire as its latest and
// a make-up run after it would find the earlier fires covered, or run this
// one again. Reserving and choosing happen under one lock, so an item that
// becomes free meanwhile cannot be taken as a plain fire with its debt left
// behind.
//
// With prove, a is an assumption (see assigned) and this fire's first
// transaction proves it: the marks of the plain items carry the checks, or
// the checks go alone when there is nothing to mark. Until it is proved
// nothing starts, and if it fails everything reserved is put back and
// errAssignmentMoved returned, for the caller to read the assignment and
// fire again; reserved is then not called. Without prove it returns nil.
func (r *runner) fireItems(sess *regcenter.Session, at time.Time, a assigned, reserved func(), prove bool) error {
	cfg := r.config()
	gaps := r.inheritedGaps(sess, at, a)
	res := r.reserveFire(a.items, at, gaps, cfg)
	var marked []int
	if prove {
		var err error
		if marked, err = r.proveAndMark(sess, cfg, at, res.plain, a.checks(r.paths, r.serverID())); err != nil {
			r.undo(res)
			return err
		}
	}
	reserved()
	done := make(chan struct{})
	go func() { // owned here: waited for below
		defer close(done)
		r.runReserved(sess, cfg, res.debts, "making up for owed fires with this one")
	}()
	if prove {
		r.launch(sess, cfg, at, marked, KindFire)
	} else {
		r.run(sess, cfg, at, res.plain, KindFire)
	}
	<-done
	return nil
}

// proveAndMark sends a fire's proof (checks) with the running marks of its
// plain items, or alone when it marks nothing: no items, every item still
// busy, or an unmonitored job. A fire must prove its assumption even then,
// or an instance whose items stay busy would never learn that a reshard
// moved them. It returns the items marked; on an error nothing is marked
// and the items are still reserved (but for those markRunning dropped:
// running elsewhere, they are owed and released).
func (r *runner) proveAndMark(sess *regcenter.Session, cfg Config, at time.Time, plain []int, checks []regcenter.Op) ([]int, error) {
	if len(plain) == 0 || cfg.Unmonitored {
		ok, err := r.proveAssignment(sess, checks)
		if err == nil && !ok {
			err = errAssignmentMoved
		}
		return plain, err
	}
	ctx, cancel := r.coordCtx(sess)
	defer cancel()
	marked, err := r.markRunning(ctx, sess, at, KindFire, plain, checks)
	if errors.Is(err, errAssignmentMoved) {
		r.forgetAssignment()
	}
	return marked, err
}

// inheritedGaps returns, for the items of this fire that this instance did
// not hold without a break since its previous fire (see heldSince), the
// earliest fire before at that the item has not completed, where there is
// one. A previous owner that died (or lost its session) between fires
// leaves such gaps: the reshard moves its items, and nothing else records
// the fires it owed. It reads ZooKeeper only for items not held
// throughout, so only after a reshard or a new session; what it reads
// replaces what this instance knew of those items' records, which another
// instance may have written meanwhile.
func (r *runner) inheritedGaps(sess *regcenter.Session, at time.Time, a assigned) map[int]time.Time {
	cfg := r.config()
	r.mu.Lock()
	held := a.heldSince(r.lastHeld)
	r.lastHeld = a
	var fresh []int
	for _, it := range a.items {
		if !held[it] && it >= 0 && it < cfg.ShardingTotalCount {
			fresh = append(fresh, it)
			delete(r.covered, it)
		}
	}
	r.mu.Unlock()
	if len(fresh) == 0 || cfg.Unmonitored || cfg.Misfire == MisfireSkip {
		return nil // steady state: nothing newly held
	}
	sched, _, err := cfg.Schedule()
	if err != nil {
		return nil
	}
	before := prevFire(sched, at.Add(-time.Millisecond))
	if before.IsZero() {
		return nil
	}
	ctx, cancel := r.coordCtx(sess)
	defer cancel()
	recs := make([]record, len(fresh))
	debts := make([]time.Time, len(fresh))
	errs := make([]error, 2*len(fresh))
	parallelEach(2*len(fresh), 32, func(i int) {
		if i < len(fresh) {
			recs[i], errs[i] = r.readRecord(ctx, fresh[i])
		} else {
			debts[i-len(fresh)], errs[i] = r.readDebt(ctx, fresh[i-len(fresh)])
		}
	})
	var gaps map[int]time.Time
	for i, it := range fresh {
		if err := errors.Join(errs[i], errs[len(fresh)+i]); err != nil {
			r.log.Warn("reading an inherited item's record", "item", it, "err", err)
			continue
		}
		r.mu.Lock()
		r.covered[it] = recs[i]
		if !debts[i].IsZero() {
			r.misfireNodes[it] = true // its debt is ours now: paid, the node goes
		}
		r.mu.Unlock()
		var since time.Time
		if done := recs[i].through(); !done.IsZero() && done.Before(before) {
			since = sched.Next(done) // nothing ran since done
		}
		if d := debts[i]; !d.IsZero() && !d.After(before) && (since.IsZero() || d.Before(since)) {
			// An instance that owed the item a run left the debt behind
			// (it died, or a reshard moved the item): the make-up run
			// runs what of it the record does not list.
			since = d
		}
		if since.IsZero() || since.After(before) {
			continue
		}
		if gaps == nil {
			gaps = map[int]time.Time{}
		}
		gaps[it] = since
	}
	return gaps
}

// readDebt reads the item's misfire node: the earliest fire an instance
// that could not run the item (it was running elsewhere) owed it, if any.
// The node outlives that instance, whose debt was otherwise in its memory
// only.
func (r *runner) readDebt(ctx context.Context, item int) (time.Time, error) {
	data, _, err := r.rc.Get(ctx, r.paths.ItemNode(item, layout.Misfire))
	if errors.Is(err, regcenter.ErrNoNode) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	var m misfireMark
	if err := json.Unmarshal(data, &m); err != nil || m.Since <= 0 {
		r.log.Warn("garbage in misfire node; ignored", "item", item, "data", quoteShort(string(data)), "err", err)
		return time.Time{}, nil
	}
	return time.UnixMilli(m.Since), nil
}

// requestReshard flags a reshard and asks the leader for it at once (the
// leader watches the flag's data).
func (r *runner) requestReshard(ctx context.Context) error {
	ops := r.paths.FlagReshardOps()
	ops[0] = regcenter.CreateOp{Path: r.paths.Necessary(), Data: []byte(r.serverID())}
	err := r.rc.Multi(ctx, ops...)
	if errors.Is(err, regcenter.ErrNodeExists) {
		_, err = r.rc.Set(ctx, r.paths.Necessary(), []byte(r.serverID()), -1)
	}
	if err != nil && !errors.Is(err, regcenter.ErrNoNode) {
		return fmt.Errorf("requesting a reshard: %w", err)
	}
	return nil
}

// coordCtx bounds ZooKeeper coordination for a fire: the reshard timeout,
// the session, and the runner's life (stop ends waits at once).
func (r *runner) coordCtx(sess *regcenter.Session) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(sess.Ctx(), r.s.opts.reshardTimeout)
	unlink := context.AfterFunc(r.lifeCtx, cancel)
	return ctx, func() { unlink(); cancel() }
}

// awaitSharding returns once no reshard is due: the leader reshards, the
// others wait on a watch (never a polling loop) until ctx ends.
func (r *runner) awaitSharding(ctx context.Context) error {
	var changed chan struct{}
	var cancelWatch func()
	defer func() {
		if cancelWatch != nil {
			cancelWatch()
		}
	}()
	for {
		due, _, err := r.rc.Exists(ctx, r.paths.Necessary())
		if err != nil {
			return err
		}
		if !due {
			return nil
		}
		if r.elect.IsLeader() {
			err := r.reshard(ctx)
			if err == nil {
				continue
			}
			r.log.Warn("resharding failed", "err", err)
		}
		if cancelWatch == nil {
			// Only now pay for a watch: steady state needs none.
			changed = make(chan struct{}, 1)
			poke := func(regcenter.Event) {
				select {
				case changed <- struct{}{}:
				default:
				}
			}
			c1 := r.rc.Watch(r.paths.Necessary(), regcenter.WatchNode, poke)
			c2 := r.rc.Watch(r.paths.Processing(), regcenter.WatchNode, poke)
			cancelWatch = func() { c1(); c2() }
			if !r.elect.IsLeader() {
				// Ask the leader to reshard now: it may not fire soon (a
				// rare cron, a trigger here). Writing the flag's data is
				// the request; the leader watches it.
				if _, err := r.rc.Set(ctx, r.paths.Necessary(), []byte(r.serverID()), -1); err != nil && !errors.Is(err, regcenter.ErrNoNode) {
					r.log.Warn("asking the leader to reshard", "err", err)
				}
			}
			continue // re-check now that the watches are armed
		}
		r.mu.Lock()
		leaderGen := r.leaderGen
		r.mu.Unlock()
		select {
		case <-changed:
		case <-leaderGen:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// reshard is the leader's one-transaction reshard.
func (r *runner) reshard(ctx context.Context) error {
	// One reshard at a time (a fire's and a follower's request can meet);
	// the second finds the flag gone and has nothing to do.
	select {
	case r.reshardSem <- struct{}{}:
		// Uncontended: the caller has just seen the flag.
	default:
		select {
		case r.reshardSem <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		// Waited for another reshard: it may have done the work.
		if due, _, err := r.rc.Exists(ctx, r.paths.Necessary()); err != nil || !due {
			<-r.reshardSem
			return err
		}
	}
	defer func() { <-r.reshardSem }()
	fence, err := r.elect.Fence()
	if err != nil {
		return err
	}
	if _, err := r.rc.Create(ctx, r.paths.Processing(), []byte(r.serverID()), regcenter.Ephemeral); err != nil && !errors.Is(err, regcenter.ErrNodeExists) {
		return fmt.Errorf("flag processing: %w", err)
	}
	servers, err := r.readServers(ctx)
	if err != nil {
		r.dropProcessing(ctx)
		return err
	}
	fakes, err := r.fakeStatuses(ctx, servers)
	if err != nil {
		r.dropProcessing(ctx)
		return err
	}
	cfg := r.config()
	online := servers.online()
	strategy, err := sharding.Lookup(cfg.ShardingStrategy)
	if err != nil {
		r.dropProcessing(ctx)
		return err
	}
	assign, err := sharding.Assign(strategy, r.name, online, cfg.ShardingTotalCount)
	if err != nil {
		r.dropProcessing(ctx)
		return err
	}
	if cfg.Failover {
		if err := r.queueDeparted(ctx, servers); err != nil {
			r.log.Warn("queueing a departed instance's items for failover", "err", err)
		}
	}
	ops := []regcenter.Op{fence}
	for _, p := range fakes {
		ops = append(ops, regcenter.DeleteOp{Path: p, Version: -1})
	}
	for _, sv := range servers.names() {
		kids := servers[sv]
		shardPath := r.paths.Flag(sv, layout.Sharding)
		if items, ok := assign[sv]; ok {
			data := []byte(layout.FormatItems(items))
			if kids[layout.Sharding] {
				ops = append(ops, regcenter.SetOp{Path: shardPath, Data: data, Version: -1})
			} else {
				ops = append(ops, regcenter.CreateOp{Path: shardPath, Data: data})
			}
			continue
		}
		// Offline or disabled. An offline server with nothing but its
		// assignment is removed, so that entries of instances that are
		// gone for good do not pile up.
		onlyAssignment := len(kids) == 0 || (len(kids) == 1 && kids[layout.Sharding])
		switch {
		case !kids[layout.Status] && onlyAssignment:
			if kids[layout.Sharding] {
				ops = append(ops, regcenter.DeleteOp{Path: shardPath, Version: -1})
			}
			ops = append(ops, regcenter.DeleteOp{Path: r.paths.Server(sv), Version: -1})
		case kids[layout.Sharding]:
			ops = append(ops, regcenter.SetOp{Path: shardPath, Data: nil, Version: -1})
		}
	}
	ops = append(ops,
		regcenter.DeleteOp{Path: r.paths.Necessary(), Version: -1},
		regcenter.DeleteOp{Path: r.paths.Processing(), Version: -1})
	if err := r.rc.Multi(ctx, ops...); err != nil {
		r.dropProcessing(ctx)
		return fmt.Errorf("reshard transaction: %w", err)
	}
	r.mu.Lock()
	r.lastSharded = online
	r.mu.Unlock()
	r.log.Info("resharded", "servers", online, "items", cfg.ShardingTotalCount, "strategy", cfg.ShardingStrategy)
	return nil
}

// fakeStatuses finds status nodes that no instance holds — persistent ones:
// an instance's status is always ephemeral — marks their servers offline in
// servers, and returns their paths for the reshard to delete. Left alone,
// such a node makes a server look online forever and its items never run.
func (r *runner) fakeStatuses(ctx context.Context, servers serverSet) ([]string, error) {
	var fakes []string
	for _, sv := range servers.names() {
		if !servers[sv][layout.Status] {
			continue
		}
		p := r.paths.Flag(sv, layout.Status)
		ok, st, err := r.rc.Exists(ctx, p)
		if err != nil {
			return nil, err
		}
		if ok && st.EphemeralOwner == 0 {
			r.log.Warn("persistent status node: not an instance's; the server is treated as offline and the node removed", "server", sv, "node", p)
			delete(servers[sv], layout.Status)
			fakes = append(fakes, p)
		}
	}
	return fakes, nil
}

func (r *runner) dropProcessing(ctx context.Context) {
	if err := r.rc.Delete(ctx, r.paths.Processing(), -1); err != nil && !errors.Is(err, regcenter.ErrNoNode) {
		r.log.Warn("removing processing flag", "err", err)
	}
}

// serverSet maps each server id to the set of its child nodes.
type serverSet map[string]map[string]bool

func (s serverSet) names() []string {
	out := make([]string, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	sortStrings(out)
	return out
}

// online lists servers with a live status and no disabled flag, sorted.
func (s serverSet) online() []string {
	var out []string
	for _, sv := range s.names() {
		if kids := s[sv]; kids[layout.Status] && !kids[layout.Disabled] {
			out = append(out, sv)
		}
	}
	return out
}

func (r *runner) readServers(ctx context.Context) (serverSet, error) {
	names, err := r.rc.Children(ctx, r.paths.Servers())
	if errors.Is(err, regcenter.ErrNoNode) {
		return serverSet{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := serverSet{}
	for _, sv := range names {
		kids, err := r.rc.Children(ctx, r.paths.Server(sv))
		if errors.Is(err, regcenter.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		set := map[string]bool{}
		for _, k := range kids {
			set[k] = true
		}
		out[sv] = set
	}
	return out, nil
}

// ---- leadership ----

func (r *runner) onElected(ctx context.Context) {
	r.bumpLeaderGen()
	r.mu.Lock()
	r.lastSharded = nil
	r.mu.Unlock()
	r.goFunc(func() {
		r.setNecessary(ctx)
		r.watchServers(ctx)
		r.mu.Lock()
		if _, ok := r.leaderWatches["/necessary"]; !ok && ctx.Err() == nil {
			// An instance about to fire asks for a reshard by writing the
			// flag's data: reshard at once rather than at our next fire.
			r.leaderWatches["/necessary"] = r.rc.Watch(r.paths.Necessary(), regcenter.WatchNode, func(ev regcenter.Event) {
				switch ev.Type {
				case regcenter.EventDataChanged:
					r.reshardKick.kick()
				case regcenter.EventCreated:
					r.epochKick.kick() // a flag set by hand moves no epoch
				}
			})
		}
		r.mu.Unlock()
	})
}

// reshardOnRequest is the leader's answer to a waiting instance's request.
func (r *runner) reshardOnRequest() {
	if !r.elect.IsLeader() {
		return
	}
	sess := r.rc.Session()
	ctx, cancel := r.coordCtx(sess)
	defer cancel()
	if due, _, err := r.rc.Exists(ctx, r.paths.Necessary()); err != nil || !due {
		return
	}
	if err := r.reshard(ctx); err != nil {
		r.log.Warn("resharding on request", "err", err)
	}
}

func (r *runner) onRevoked() {
	r.bumpLeaderGen()
	r.mu.Lock()
	cancels := r.leaderWatches
	r.leaderWatches = map[string]func(){}
	r.mu.Unlock()
	for _, c := range cancels {
		c()
	}
}

func (r *runner) bumpLeaderGen() {
	r.mu.Lock()
	close(r.leaderGen)
	r.leaderGen = make(chan struct{})
	r.mu.Unlock()
}

// watchServers keeps the leader watching the server list and every
// server's flags; any change that alters the set of servers able to take
// items flags a reshard.
func (r *runner) watchServers(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	r.mu.Lock()
	if _, ok := r.leaderWatches[""]; !ok {
		r.leaderWatches[""] = r.rc.Watch(r.paths.Servers(), regcenter.WatchChildren, func(regcenter.Event) {
			r.membership.kick()
		})
	}
	r.mu.Unlock()
	r.membership.kick()
}

// checkMembership runs on the leader after a server-related change.
func (r *runner) checkMembership() {
	if !r.elect.IsLeader() {
		return
	}
	sess := r.rc.Session()
	ctx, cancel := context.WithTimeout(sess.Ctx(), r.s.opts.reshardTimeout)
	defer cancel()
	servers, err := r.readServers(ctx)
	if err != nil {
		r.log.Warn("reading servers", "err", err)
		return
	}
	r.mu.Lock()
	if !r.elect.IsLeader() {
		r.mu.Unlock()
		return
	}
	for _, sv := range servers.names() {
		if _, ok := r.leaderWatches[sv]; !ok {
			r.leaderWatches[sv] = r.rc.Watch(r.paths.Server(sv), regcenter.WatchChildren, func(regcenter.Event) {
				r.membership.kick()
			})
		}
	}
	for sv, c := range r.leaderWatches {
		if _, ok := servers[sv]; !ok && sv != "" && !strings.HasPrefix(sv, "/") {
			c()
			delete(r.leaderWatches, sv)
		}
	}
	last := r.lastSharded
	r.mu.Unlock()
	online := servers.online()
	if last == nil || !equalStrings(last, online) {
		r.setNecessary(ctx)
	}
	if r.config().Failover {
		if err := r.queueDeparted(ctx, servers); err != nil {
			r.log.Warn("queueing a departed instance's items for failover", "err", err)
		}
	}
}

// ---- execution ----

// execute runs items for the fire at, marking them running and completed.
func (r *runner) execute(sess *regcenter.Session, at time.Time, items []int, kind Kind) {
	cfg := r.config()
	r.run(sess, cfg, at, r.reserve(items, at, time.Time{}, kind, cfg), kind)
}

// run executes items reserved here: marks, runs and completes them.
func (r *runner) run(sess *regcenter.Session, cfg Config, at time.Time, todo []int, kind Kind) {
	if len(todo) == 0 {
		return
	}
	if !cfg.Unmonitored {
		ctx, cancel := r.coordCtx(sess)
		marked, err := r.markRunning(ctx, sess, at, kind, todo, nil)
		cancel()
		// On an error, marked holds the items still reserved here.
		if err != nil && kind == KindFailover {
			// The queue entries stay; give the claims back for a retry.
			r.log.Warn("cannot mark failover items running; handing them back", "items", marked, "err", err)
			hctx, hcancel := context.WithTimeout(sess.Ctx(), r.s.opts.reshardTimeout)
			r.handBack(hctx, sess, marked)
			hcancel()
			r.release(marked)
			return
		}
		if err != nil {
			r.log.Warn("cannot mark items running; they will run as a misfire", "items", marked, "err", err)
			for _, it := range marked {
				r.noteMisfire(it, at, cfg)
			}
			r.release(marked)
			return
		}
		todo = marked
	}
	r.launch(sess, cfg, at, todo, kind)
}

// launch runs items reserved (and, monitored, marked running) here, and
// completes them.
func (r *runner) launch(sess *regcenter.Session, cfg Config, at time.Time, todo []int, kind Kind) {
	n := len(todo)
	if n == 0 {
		return
	}
	results := make(chan itemResult, n)
	var fires map[int]time.Time
	var priors map[int]record
	switch kind {
	case KindMisfire, KindFailover:
		fires = r.absorbDebts(cfg, todo, at)
		if !cfg.Unmonitored {
			var settled []itemResult
			todo, priors, settled = r.stillOwed(sess, cfg, at, fires, todo, kind)
			for _, s := range settled {
				results <- s
			}
		}
	case KindFire:
		priors = r.priorsFor(todo)
	}
	params, _ := cfg.ItemParameters()
	for _, it := range todo {
		fire := at
		if f, ok := fires[it]; ok {
			fire = f
		}
		prior := priors[it]
		if !r.goFunc(func() {
			res := r.runItem(sess, cfg, params, fire, it, kind)
			res.prior = prior
			results <- res
		}) {
			results <- itemResult{item: it, fire: fire, kind: kind, begin: time.Now(), end: time.Now(), halted: ErrSchedulerClosed}
		}
	}
	r.completeAll(sess, cfg, results, n)
}

// priorsFor returns what the records of items said when this instance last
// wrote or read them: facts (see cover), which a completion adds its own
// run to.
func (r *runner) priorsFor(items []int) map[int]record {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.covered) == 0 {
		return nil
	}
	out := make(map[int]record, len(items))
	for _, it := range items {
		if c, ok := r.covered[it]; ok {
			out[it] = c
		}
	}
	return out
}

// stillOwed narrows a make-up run (misfire or failover) to the fires its
// items still owe, now that this instance holds their running marks: the
// item's completed node, which every run's completion writes before its
// mark goes, lists which fires earlier runs covered — here or on another
// instance (a previous owner paying its own debt after a reshard moved the
// item, a failover claimer). Those are not run again. An item whose every
// owed fire is covered is settled without running; the others run the
// first stretch of fires not covered, and a later uncovered fire stays
// owed. fires holds the items whose run starts at another fire than at; it
// is updated in place. priors are the records read, which the runs'
// completions add to.
func (r *runner) stillOwed(sess *regcenter.Session, cfg Config, at time.Time, fires map[int]time.Time, items []int, kind Kind) (todo []int, priors map[int]record, settled []itemResult) {
	sched, _, err := cfg.Schedule()
	if err != nil {
		return items, nil, nil
	}
	ctx, cancel := r.coordCtx(sess)
	defer cancel()
	covers := make([]record, len(items))
	errs := make([]error, len(items))
	parallelEach(len(items), 32, func(i int) {
		covers[i], errs[i] = r.readRecord(ctx, items[i])
	})
	priors = map[int]record{}
	for i, it := range items {
		since := at
		if f, ok := fires[it]; ok {
			since = f
		}
		c := covers[i]
		if errs[i] != nil {
			// Cannot tell: run it (at least once beats a lost fire).
			r.log.Warn("reading an owed item's last completed fire", "item", it, "err", errs[i])
			todo = append(todo, it)
			continue
		}
		priors[it] = c
		r.mu.Lock()
		upTo := since
		if e := r.running[it]; e != nil && e.through.After(upTo) {
			upTo = e.through
		}
		first, last, rest := c.owed(sched, since, upTo)
		if !first.IsZero() {
			if e := r.running[it]; e != nil {
				e.through = last
			}
			if !rest.IsZero() {
				r.noteMisfireLocked(it, rest, cfg)
			}
		}
		r.mu.Unlock()
		switch {
		case first.IsZero():
			r.log.Info("owed run already made up for; settled without running", "item", it, "kind", kind, "since", since, "completed", c.through())
			now := time.Now()
			settled = append(settled, itemResult{item: it, fire: since, through: upTo, kind: kind, begin: now, end: now, settled: true})
		case !first.Equal(since) || !last.Equal(upTo):
			fires[it] = first
			r.log.Info("owed run narrowed to the fires its item's record does not list", "item", it, "kind", kind, "since", since, "through", upTo, "runs", first, "to", last, "still_owed", rest)
			todo = append(todo, it)
		default:
			todo = append(todo, it)
		}
	}
	return todo, priors, settled
}

// absorbDebts folds into a make-up run starting at at the misfire debts
// this instance holds for its items since earlier fires: the run covers
// them too (from the earliest), and they are forgotten. A make-up run that
// left an earlier debt behind would record a later fire as completed, and
// the debt's run would then start after it: the fires between would be
// lost. It returns the items whose run starts earlier than at.
func (r *runner) absorbDebts(cfg Config, items []int, at time.Time) map[int]time.Time {
	fires := map[int]time.Time{}
	sched, _, schedErr := cfg.Schedule()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, it := range items {
		since, owed := r.misfires[it]
		if !owed {
			continue
		}
		// The run stands for the fires through the latest due when it
		// was reserved; a debt noted since (a fire that found it
		// reserved, while its marks were being written) is not its to
		// pay.
		through := at
		if e := r.running[it]; e != nil && e.through.After(through) {
			through = e.through
		}
		if since.After(through) {
			continue
		}
		if since.Before(at) {
			fires[it] = since
		}
		if last := r.misfireLast[it]; last.After(through) && schedErr == nil {
			if next := sched.Next(through); !next.IsZero() && !next.After(last) {
				r.misfires[it] = next // the fires after the run stay owed
				continue
			}
		}
		r.dropDebtLocked(it)
	}
	return fires
}

// parallelEach calls fn(0..n-1) on at most limit goroutines at a time and
// returns when every call has.
func parallelEach(n, limit int, fn func(i int)) {
	if n <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, limit)
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() { // owned here: waited for below
			defer wg.Done()
			defer func() { <-sem }()
			fn(i)
		}()
	}
	wg.Wait()
}

func (r *runner) noteMisfire(item int, at time.Time, cfg Config) {
	r.mu.Lock()
	r.noteMisfireLocked(item, at, cfg)
	r.mu.Unlock()
}

func (r *runner) noteMisfireLocked(item int, at time.Time, cfg Config) {
	if cfg.Misfire == MisfireSkip {
		return
	}
	if prev, ok := r.misfires[item]; !ok || at.Before(prev) {
		r.misfires[item] = at
		r.log.Debug("run owed", "item", item, "since", at)
	}
	if at.After(r.misfireLast[item]) {
		r.misfireLast[item] = at
	}
}

// dropDebtLocked forgets item's misfire debt. r.mu is held.
func (r *runner) dropDebtLocked(item int) {
	delete(r.misfires, item)
	delete(r.misfireLast, item)
}

// marksPerTxn bounds the marks of one transaction: ten thousand in one
// would pass ZooKeeper's request limit (jute.maxbuffer, 1 MB by default).
const marksPerTxn = 1000

// markRunning creates the running marks of items, in one transaction per
// marksPerTxn items. Items running elsewhere are dropped (and owed a
// misfire) and the rest retried. checks go first in the first transaction;
// if one fails, markRunning returns errAssignmentMoved. On an error it
// returns the items still reserved here, for the caller to release; items
// a later transaction could not mark are owed a misfire (or, for failover,
// handed back) and released, and the ones marked are returned without error.
func (r *runner) markRunning(ctx context.Context, sess *regcenter.Session, at time.Time, kind Kind, items []int, checks []regcenter.Op) ([]int, error) {
	var marked []int
	for start := 0; start < len(items); start += marksPerTxn {
		end := min(start+marksPerTxn, len(items))
		got, err := r.markChunk(ctx, sess, at, kind, items[start:end], checks)
		checks = nil
		if err == nil {
			marked = append(marked, got...)
			continue
		}
		rest := append(got, items[end:]...)
		if start == 0 {
			return rest, err
		}
		r.log.Warn("cannot mark the rest of the items running", "items", len(rest), "err", err)
		if kind == KindFailover {
			r.handBack(ctx, sess, rest)
		} else {
			cfg := r.config()
			for _, it := range rest {
				r.noteMisfire(it, at, cfg)
			}
		}
		r.release(rest)
		break
	}
	return marked, nil
}

// markChunk is one transaction of markRunning. On an error it returns the
// items still reserved here.
func (r *runner) markChunk(ctx context.Context, sess *regcenter.Session, at time.Time, kind Kind, items []int, checks []regcenter.Op) ([]int, error) {
	items = slices.Clone(items)
	now := time.Now()
	data, _ := json.Marshal(runningMark{Server: r.serverID(), Fire: at.UnixMilli(), Kind: kind, Begin: now.UnixMilli(), Session: sess.String()})
	parentsMade := false
	for attempt := 0; len(items) > 0; attempt++ {
		if err := sess.Check(); err != nil {
			return items, err
		}
		ops := make([]regcenter.Op, 0, len(checks)+len(items))
		ops = append(ops, checks...)
		for _, it := range items {
			ops = append(ops, regcenter.CreateOp{Path: r.paths.ItemNode(it, layout.Running), Data: data, Mode: regcenter.Ephemeral})
		}
		err := r.rc.Multi(ctx, ops...)
		if err == nil {
			return items, nil
		}
		var me *regcenter.MultiError
		if errors.As(err, &me) && me.Index < len(checks) {
			return items, errAssignmentMoved
		}
		if !errors.As(err, &me) || attempt > 2*len(items)+2 {
			return items, err
		}
		idx := me.Index - len(checks)
		item := items[idx]
		switch {
		case errors.Is(me.Err, regcenter.ErrNodeExists):
			if r.dropStaleMark(ctx, sess, item) {
				continue
			}
			// Running elsewhere (or still running from an earlier fire).
			items = append(items[:idx:idx], items[idx+1:]...)
			if kind == KindFailover {
				// The queue entry still records the debt: give the claim
				// back rather than hold it while the item runs elsewhere.
				r.handBack(ctx, sess, []int{item})
				r.release([]int{item})
				continue
			}
			// Owed before the item is free again here: a fire reserving
			// it in between must see the debt, or it would run as a plain
			// fire and the debt's run would run that fire again.
			r.noteMisfire(item, at, r.config())
			r.release([]int{item})
			r.owesMisfireRemote(ctx, item, at)
		case errors.Is(me.Err, regcenter.ErrNoNode) && !parentsMade:
			// A first fire: make every missing item node of the chunk at
			// once, not one round trip per item.
			parentsMade = true
			if err := r.makeItemNodes(ctx, items); err != nil {
				return items, err
			}
		case errors.Is(me.Err, regcenter.ErrNoNode):
			if err := r.rc.EnsurePath(ctx, r.paths.Item(item)); err != nil {
				return items, err
			}
		default:
			return items, err
		}
	}
	return items, nil
}

// makeItemNodes creates the execution nodes of items that do not exist
// yet: one read of the existing ones and one transaction. A node created
// meanwhile by another instance is left to markChunk's per-item retry.
func (r *runner) makeItemNodes(ctx context.Context, items []int) error {
	if err := r.rc.EnsurePath(ctx, r.paths.Execution()); err != nil {
		return err
	}
	names, err := r.rc.Children(ctx, r.paths.Execution())
	if err != nil {
		return err
	}
	have := make(map[string]bool, len(names))
	for _, n := range names {
		have[n] = true
	}
	var ops []regcenter.Op
	for _, it := range items {
		if !have[strconv.Itoa(it)] {
			ops = append(ops, regcenter.CreateOp{Path: r.paths.Item(it)})
		}
	}
	if len(ops) == 0 {
		return nil
	}
	err = r.rc.Multi(ctx, ops...)
	if errors.Is(err, regcenter.ErrNodeExists) {
		return nil
	}
	return err
}

// dropStaleMark deletes item's running mark if it belongs to this very
// ZooKeeper session: a mark left by an execution of an earlier generation of
// the session (its lease lapsed, the session survived), whose completion
// could not delete it. The item is reserved here, so no execution of ours
// holds it. The delete is fenced on the live generation.
func (r *runner) dropStaleMark(ctx context.Context, sess *regcenter.Session, item int) bool {
	p := r.paths.ItemNode(item, layout.Running)
	ok, st, err := r.rc.Exists(ctx, p)
	if err != nil || !ok {
		return false
	}
	if st.EphemeralOwner == 0 {
		// A persistent mark: shardjob only ever writes ephemeral ones, so
		// no execution holds it and it would block the item for good.
		err := r.rc.Delete(ctx, p, st.Version)
		if err != nil && !errors.Is(err, regcenter.ErrNoNode) {
			r.log.Warn("removing a persistent running mark that blocks the item", "item", item, "node", p, "err", err)
			return false
		}
		r.log.Warn("removed a persistent running mark that blocked the item (not written by an instance)", "item", item, "node", p)
		return true
	}
	if st.EphemeralOwner != sess.ID() {
		return false
	}
	fence, ok := r.elect.SessionFence(sess)
	if !ok {
		return false
	}
	if err := r.rc.Multi(ctx, fence, regcenter.DeleteOp{Path: p, Version: st.Version}); err != nil {
		r.log.Warn("removing a stale running mark of this instance", "item", item, "err", err)
		return false
	}
	r.log.Info("removed a stale running mark of this instance", "item", item)
	return true
}

// owesMisfireRemote records that item missed the fire at because another
// instance (or an earlier fire) still runs it, and arranges to run it once
// when that execution ends.
func (r *runner) owesMisfireRemote(ctx context.Context, item int, at time.Time) {
	cfg := r.config()
	if cfg.Misfire == MisfireSkip {
		return
	}
	r.mu.Lock()
	r.noteMisfireLocked(item, at, cfg)
	since := r.misfires[item]
	haveNode := r.misfireNodes[item]
	_, waiting := r.remoteWaits[item]
	r.mu.Unlock()
	if !haveNode {
		data, _ := json.Marshal(misfireMark{Since: since.UnixMilli()})
		_, err := r.rc.Create(ctx, r.paths.ItemNode(item, layout.Misfire), data, regcenter.Persistent)
		if err == nil || errors.Is(err, regcenter.ErrNodeExists) {
			r.mu.Lock()
			r.misfireNodes[item] = true
			r.mu.Unlock()
		} else {
			r.log.Warn("recording misfire", "item", item, "err", err)
		}
	}
	if waiting {
		return
	}
	running := r.paths.ItemNode(item, layout.Running)
	// The item is tried again when the mark goes, not at every fire
	// meanwhile (runMisfires skips items with a wait): the wait ends first.
	ended := func() {
		r.mu.Lock()
		if c := r.remoteWaits[item]; c != nil {
			c()
			delete(r.remoteWaits, item)
		}
		r.mu.Unlock()
		r.runMisfires(r.rc.Session())
	}
	cancel := r.onGone(running, ended)
	r.mu.Lock()
	if _, dup := r.remoteWaits[item]; dup {
		r.mu.Unlock()
		cancel()
		return
	}
	r.remoteWaits[item] = cancel
	r.mu.Unlock()
}

// runMisfires runs, once each, the items owed a misfire that are not
// running here now.
func (r *runner) runMisfires(sess *regcenter.Session) {
	// Each item is tried once per call: one still running elsewhere is
	// owed again and retried when its mark goes (a watch), not in a loop.
	tried := map[int]bool{}
	for {
		r.mu.Lock()
		if r.stopping || sess != r.regSess || sess.Check() != nil {
			r.mu.Unlock()
			return
		}
		// Grouped by debt: a run is labelled with its own items' earliest
		// missed fire, not with the oldest of all. Each item is reserved
		// in the same lock that takes its debt: a fire reserving it in
		// between would find neither, run as a plain fire, and the debt's
		// run would run that fire again.
		cfg := r.config()
		debts := map[time.Time][]int{}
		for it, at := range r.misfires {
			if _, busy := r.running[it]; busy || tried[it] {
				continue
			}
			if _, waiting := r.remoteWaits[it]; waiting {
				r.log.Debug("owed run waits for the item's mark", "item", it)
				continue // running elsewhere: tried when its mark goes
			}
			tried[it] = true
			last := r.misfireLast[it]
			r.dropDebtLocked(it)
			if it < 0 || it >= cfg.ShardingTotalCount || r.disabledItems[it] {
				continue // no longer an item, or kept out
			}
			if last.After(r.dispatched[it]) {
				r.dispatched[it] = last
			}
			r.running[it] = &execution{item: it, fire: at, through: r.makeUpThrough(cfg, at)}
			debts[at] = append(debts[at], it)
		}
		r.mu.Unlock()
		if len(debts) == 0 {
			return
		}
		r.runReserved(sess, cfg, debts, "running misfired items")
	}
}

// runReserved runs each group of items, reserved here, as a make-up run
// since its fire, the groups concurrently, and returns when all have ended.
func (r *runner) runReserved(sess *regcenter.Session, cfg Config, debts map[time.Time][]int, msg string) {
	var wg sync.WaitGroup
	for since, items := range debts {
		sortInts(items)
		r.log.Info(msg, "items", items, "since", since)
		wg.Add(1)
		go func() { // owned here: waited for below
			defer wg.Done()
			r.run(sess, cfg, since, items, KindMisfire)
		}()
	}
	wg.Wait()
}

type itemResult struct {
	item   int
	fire   time.Time
	kind   Kind
	begin  time.Time
	end    time.Time
	err    error
	halted error // non-nil when the execution was cut short: not completed
	// settled: nothing ran, earlier runs had made up for every fire owed;
	// the completion cleans up (mark, misfire node, queue entry) but
	// records no completion of its own.
	settled bool
	// through is the latest fire the execution stood for (see
	// ShardingContext.Through).
	through time.Time
	// prior is what the item's record said before this run (see record):
	// the completion records it with this run added.
	prior record
}

func (r *runner) runItem(sess *regcenter.Session, cfg Config, params map[int]string, at time.Time, item int, kind Kind) itemResult {
	ctx, cancel := context.WithCancelCause(sess.Ctx())
	defer cancel(nil)
	stopLink := context.AfterFunc(r.execCtx, func() { cancel(context.Cause(r.execCtx)) })
	defer stopLink()
	through := at
	r.mu.Lock()
	if e := r.running[item]; e != nil {
		e.kind, e.fire, e.cancel = kind, at, cancel
		if e.through.After(at) {
			through = e.through
		}
	}
	r.mu.Unlock()

	sc := ShardingContext{
		JobName: r.name, TaskID: taskID(r.name, at), FireTime: at, Through: through,
		ShardingTotalCount: cfg.ShardingTotalCount, Item: item, ItemParameter: params[item],
		JobParameter: cfg.JobParameter, Kind: kind, ServerID: r.serverID(),
		owner: &ownership{sess: sess, ctx: ctx},
	}
	res := itemResult{item: item, fire: at, through: through, kind: kind, begin: time.Now()}
	ev := r.listenerEvent(sc, res.begin)
	for _, l := range r.s.opts.listeners {
		l.BeforeExecution(ev)
	}
	res.err = r.call(ctx, sc)
	res.end = time.Now()
	if ctx.Err() != nil {
		res.halted = context.Cause(ctx)
	}
	ev.End, ev.Err = res.end, res.err
	for _, l := range r.s.opts.listeners {
		l.AfterExecution(ev)
	}
	if res.err != nil && res.halted == nil {
		r.log.Warn("item failed", "item", item, "fire", at, "kind", kind, "err", res.err)
	}
	return res
}

// call runs the job, turning a panic into an error.
func (r *runner) call(ctx context.Context, sc ShardingContext) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("job %q item %d panicked: %v", sc.JobName, sc.Item, p)
		}
	}()
	return r.job.Execute(ctx, sc)
}

func (r *runner) listenerEvent(sc ShardingContext, begin time.Time) listener.Execution {
	return listener.Execution{Job: sc.JobName, TaskID: sc.TaskID, ServerID: sc.ServerID, Item: sc.Item, Kind: string(sc.Kind), FireTime: sc.FireTime, Begin: begin}
}
