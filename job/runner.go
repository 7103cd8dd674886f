package job

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/internal/backfill"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/internal/startstop"
	"github.com/shardjob/shardjob/job/internal/book"
	"github.com/shardjob/shardjob/job/internal/confignode"
	"github.com/shardjob/shardjob/job/internal/flags"
	"github.com/shardjob/shardjob/job/internal/leader"
	"github.com/shardjob/shardjob/job/internal/prepare"
	"github.com/shardjob/shardjob/job/internal/records"
	"github.com/shardjob/shardjob/job/internal/runs"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
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

	cfg atomic.Pointer[spec]
	// endedNoted is the config whose schedule was last said to have ended
	// (noteEnded): said once per config.
	endedNoted atomic.Pointer[spec]

	// Parts, each owning its state and lock.
	book      *book.Book       // what runs, and what is owed, here (job/internal/book)
	owed      *book.Ledger     // what items are owed here, kept in the book's steps
	records   *records.Cache   // the items' completion records as known here (job/internal/records)
	watch     watchCancels     // the registration's watches (register.go)
	flags     *flags.Flags     // this server's flags for the job (job/internal/flags)
	prep      prepare.Prep     // ready to run the job's items (job/internal/prepare; its use prepare.go)
	counters  jobCounters      // behind JobStats (stats.go)
	backfills backfill.Known   // the backfill's progress as known here (backfill.go)
	bad       stored.BadValues // node versions reported as not decoding (stored.go)
	// cfgNode is the job's config node as read and written here
	// (job/internal/confignode; confignode.go).
	cfgNode *confignode.Node[Config]
	// act holds the parts a job uses only once it works: its election,
	// its fire path, its leader's and failover's duties (active.go).
	act runs.Lazy[active]

	// dispatched is the latest scheduled fire the trigger dispatched
	// (unix ns; 0 after the schedule was set): the fires between it and
	// the next one dispatched were collapsed by the trigger after a stall,
	// and are owed (skippedBefore).
	dispatched atomic.Int64
	// scheduled is when (unix ns, the fire clock) this instance began
	// firing the job's current schedule: its start, or the change of cron
	// or calendar or the enabling that scheduled it again (a new session
	// keeps it). A new job's item never run owes no fire before it
	// (inherit.Gain.Scheduled).
	scheduled atomic.Int64

	ctx  lifetimes        // the contexts stop cancels
	bg   *startstop.Group // every goroutine of the runner (goFunc), on the scheduler's workers
	kick runs.Kickers     // the runner's coalescing background tasks (kicked)
}

// lifetimes are a runner's contexts, made with it and cancelled by stop;
// the runs' own are active's (active.go), made with the parts that run
// them. coord, with its own lock, is the parent of the coordination
// (coordCtx) under a session.
type lifetimes struct {
	life       context.Context // cancelled when stop begins: ends coordination waits
	cancelLife context.CancelFunc
	coord      runs.SessionCtx
}

// The runner's coalescing background tasks, each run on a goroutine of the
// runner when kicked (kick, a runs.Kickers; kicked).
const (
	kickMembership = iota // the leader checks the servers (checkMembership)
	kickFailover          // claim queued failover items (firing.Firer.ClaimFailover)
	kickFlags             // read this server's flags (checkFlags)
	kickReshard           // the leader answers a reshard request (reshardOnRequest)
	kickEpoch             // note a moved reshard epoch (assigned.Source.NoteEpochFlag)
	kickItems             // read the disabled items (readDisabledItems)
	kickHolds             // release the marks of items a reshard moved (releaseMoved)
	kickBackfill          // run the job's backfill (runBackfill)
	kickKeys              // read the item source ahead of fires (listItems)
)

// kicked runs a kick of task.
func (r *runner) kicked(task int) {
	switch task {
	case kickMembership:
		r.checkMembership()
	case kickFailover:
		r.active().firer.ClaimFailover()
	case kickFlags:
		r.checkFlags()
	case kickReshard:
		r.reshardOnRequest()
	case kickEpoch:
		r.active().assigned.NoteEpochFlag()
	case kickItems:
		r.readDisabledItems()
	case kickHolds:
		r.releaseMoved()
	case kickBackfill:
		r.runBackfill()
	case kickKeys:
		r.listItems()
	}
}

func newRunner(s *Scheduler, cfg Config, j Job) *runner {
	r := &runner{
		s: s, name: cfg.Name, job: j, paths: layout.Job(cfg.Name), rc: s.rc,
		log:     s.log.With("job", cfg.Name),
		owed:    book.NewLedger(),
		records: records.NewCache(),
		bg:      startstop.NewOn(context.Background(), s.work.Do),
	}
	r.book = book.New(r.owed, book.Options{Log: r.log, MisfiresOwed: &r.counters.misfiresOwed, Now: s.opts.now, Lead: s.opts.fireLead, OnIdle: s.inst.ItemsIdle})
	r.setConfig(cfg)
	r.ctx.life, r.ctx.cancelLife = context.WithCancel(context.Background())
	r.wirePreparation() // leader.go
	r.cfgNode = r.newConfigNode()
	r.kick.Init(r.goFunc, r.kicked)
	return r
}

// config returns the job's current config, compiled.
func (r *runner) config() *spec { return r.cfg.Load() }

// setConfig makes c the job's config.
func (r *runner) setConfig(c Config) { r.cfg.Store(compile(c)) }

// goFire runs the scheduled fire at on a goroutine owned by the runner;
// stop waits for fires in flight before it hands over what they owe.
func (r *runner) goFire(at time.Time) {
	skipped := r.skippedBefore(at)
	order := &r.active().firer.Order
	turn := order.Enter() // on the trigger's goroutine: in fire order
	if !r.goFiring(func() {
		defer order.Leave(turn) // however the fire ends
		if err := r.prepareSync(); err != nil {
			r.log.Warn("preparing to fire", "fire", at, "err", err)
		}
		if !r.untilClaim(at, turn) {
			return
		}
		r.fireInTurn(at, skipped, turn)
	}) {
		order.Leave(turn)
	}
}

// skippedBefore notes at as the latest fire dispatched and returns the
// first fire of the schedule between the previous one dispatched and at,
// or zero when there is none: fires the trigger collapsed into at because
// the process could not run (a stall, a long pause of the machine). They
// were never dispatched, so nothing owes them unless at's fire does (see
// fireScheduled). It is called from the trigger's goroutine only, in fire
// order.
func (r *runner) skippedBefore(at time.Time) time.Time {
	prev := r.dispatched.Swap(at.UnixNano())
	if prev == 0 {
		return time.Time{}
	}
	sched, _, err := r.config().Schedule()
	if err != nil {
		return time.Time{}
	}
	if n := sched.Next(time.Unix(0, prev)); !n.IsZero() && n.Before(at) {
		return n
	}
	return time.Time{}
}

// untilClaim holds a fire dispatched ahead of its time (WithFireLead)
// until it may claim its items: in the steady state — no item of the job
// running or owed here, no fire skipped — at once or as soon as the items
// of the previous fire are released, and otherwise at the fire's time, as
// without a lead; so that items still busy with the previous fire are not
// found busy and owed a make-up run only because the fire came early.
// While it waits, its turn of the fire order naps: a debt's make-up run
// (firing.Firer.RunOwed) goes first, through the fires due within the lead. It
// returns false if the runner stops meanwhile.
func (r *runner) untilClaim(at time.Time, turn uint64) bool {
	for at.After(r.s.opts.now()) {
		steady, idle := r.book.SteadyOrIdle() // idle: closed when the items running here are released
		if steady {
			return true
		}
		firer := r.active().firer
		wake := firer.Order.Nap(turn)
		slept := firer.SleepUntil(at, idle)
		wake()
		if !slept {
			return false
		}
	}
	return true
}

// goFiring runs f on a goroutine that stop waits for as for a fire in
// flight (Book.BeginFiring), and reports whether it did; once stop has
// begun, f is dropped: the leave hands the fire's items over.
func (r *runner) goFiring(f func()) bool {
	if !r.book.BeginFiring() {
		return false
	}
	if r.bg.Go(func(context.Context) {
		defer r.book.EndFiring()
		f()
	}) != nil {
		r.book.EndFiring()
		return false
	}
	return true
}

// isClosed reports whether stop has closed the runner (see goFunc).
func (r *runner) isClosed() bool { return r.bg.Closed() }

// goFunc runs f on a goroutine owned by the runner (a scheduler's worker:
// runs.Workers); after stop begins closing, f is dropped and goFunc returns
// false.
func (r *runner) goFunc(f func()) bool {
	return r.bg.Go(func(context.Context) { f() }) == nil
}

func (r *runner) serverID() string { return r.s.opts.serverID }

func (r *runner) schedule() {
	cfg := r.config()
	if cfg.Disabled {
		r.s.trig.Remove(r.name)
		return
	}
	sched, _, err := cfg.Schedule()
	if err != nil { // validated before; defensive
		r.log.Error("cannot schedule", "err", err)
		return
	}
	r.dispatched.Store(0)                                    // a new schedule's fires start from its own next one
	r.scheduled.CompareAndSwap(0, r.s.opts.now().UnixNano()) // kept through a new session's registration
	r.s.trig.Set(r.name, sched, r.firesUntilEnded(cfg, sched), r.quickFire)
	next := sched.Next(r.s.opts.now())
	if next.IsZero() {
		r.noteEnded(cfg)
	}
	r.prepareBefore(next)
	if _, keyed := r.job.(ItemLister); keyed {
		r.kick.Kick(kickKeys)
	}
}

// quickFire reports whether the job's next scheduled fire would send no
// request to the registry: an unmonitored job firing on an assumption its
// watches prove (see assigned.Source). Such a fire needs no lead (see
// trigger.Trigger).
// A monitored fire of held items sends none before its runs either, but
// keeps its lead: reserved ahead and started on the shared timer, its runs
// start 0.3 ms sooner at the median (firebench -latency), for a parked
// goroutine per fire.
func (r *runner) quickFire() bool {
	a := r.activeIfMade() // a job that never fired assumes nothing
	return a != nil && a.cache.WatchedAssumption() && r.config().Unmonitored
}

func (r *runner) sessionTimeout() time.Duration { return r.s.sessionTimeout() }

// sessionTimeout is the registry's session timeout.
func (s *Scheduler) sessionTimeout() time.Duration {
	if z, ok := s.rc.(interface{ SessionTimeout() time.Duration }); ok {
		return z.SessionTimeout()
	}
	return regcenter.DefaultSessionTimeout
}

// setNecessary flags a reshard. It never creates parent nodes: after the
// job was removed from the cluster a late flag must not bring its tree back
// (registration creates the parents).
func (r *runner) setNecessary(ctx context.Context) { leader.FlagReshard(ctx, r.rc, r.paths, r.log) }

// fireMissedWhileDown runs once, for this instance's items, the fires skipped while the
// connection was down. It takes a turn of the fire order after the fires
// dispatched before it: one of them, held up, may come before the fires
// skipped, and takes them in its own make-up run (fireInTurn); run first,
// this make-up run, from the skipped fires on, would have that fire find
// the item run here through it, and run nothing.
//
// It runs nothing unless the job is registered under sess: a connection
// lost and found again while the job registers under a new generation
// leaves the fires to the registration, which runs them once it is done —
// no run of a generation starts before the job is registered under it,
// and the marks an ended generation left are removed before then
// (registration.Registrar.Sweep).
func (r *runner) fireMissedWhileDown(sess *regcenter.Session) {
	if !r.book.RegisteredUnder(sess) {
		return
	}
	order := &r.active().firer.Order
	turn := order.Enter()
	defer order.Leave(turn)
	order.AwaitDue(turn, r.ctx.life.Done())
	// Released once: when the run has reserved its items, or as it
	// returns (fireAssigned does not on every path). Every call is on
	// this goroutine.
	unlock, held := order.Hold(), true
	release := func() {
		if held {
			held = false
			unlock()
			order.Leave(turn) // the debts it leaves take their turn after (Firer.RunOwed)
		}
	}
	defer release()
	at := r.book.TakeMissed()
	if at.IsZero() {
		return
	}
	r.log.Info("running fires missed while disconnected", "since", at)
	r.fireAssigned(sess, at, KindMisfire, release)
}
