package job

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/election"
	"github.com/shardjob/shardjob/internal/backfill"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/internal/startstop"
	"github.com/shardjob/shardjob/job/internal/assigned"
	"github.com/shardjob/shardjob/job/internal/assume"
	"github.com/shardjob/shardjob/job/internal/backfilling"
	"github.com/shardjob/shardjob/job/internal/book"
	"github.com/shardjob/shardjob/job/internal/completion"
	"github.com/shardjob/shardjob/job/internal/confignode"
	"github.com/shardjob/shardjob/job/internal/execute"
	claims "github.com/shardjob/shardjob/job/internal/failover"
	"github.com/shardjob/shardjob/job/internal/firing"
	"github.com/shardjob/shardjob/job/internal/flags"
	"github.com/shardjob/shardjob/job/internal/heldmarks"
	"github.com/shardjob/shardjob/job/internal/inherit"
	"github.com/shardjob/shardjob/job/internal/leader"
	"github.com/shardjob/shardjob/job/internal/makeup"
	"github.com/shardjob/shardjob/job/internal/marks"
	"github.com/shardjob/shardjob/job/internal/prepare"
	"github.com/shardjob/shardjob/job/internal/records"
	"github.com/shardjob/shardjob/job/internal/reshard"
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

	cfg   atomic.Pointer[spec]
	elect *election.Election
	// endedNoted is the config whose schedule was last said to have ended
	// (noteEnded): said once per config.
	endedNoted atomic.Pointer[spec]

	// Parts, each owning its state and lock.
	book        *book.Book        // what runs, and what is owed, here (job/internal/book)
	owed        *book.Ledger      // what items are owed here, kept in the book's steps
	records     *records.Cache    // the items' completion records as known here (job/internal/records)
	inherit     assume.Inherited  // gaps gained in a reshard that may have run (inherit.go)
	holds       assume.Holds      // the running marks kept across fires
	held        *heldmarks.Keeper // releases those marks (hold.go)
	fo          *claims.State     // the failover queue as seen here (job/internal/failover)
	watch       watchCancels      // the registration's watches (register.go)
	flags       *flags.Flags      // this server's flags for the job (job/internal/flags)
	cache       assume.Cache      // the assignment the next fire may assume (job/internal/assigned)
	marker      *marks.Marker     // the running marks of runs (job/internal/firing's Mark)
	reader      *records.Reader   // the completed records read from the registry (completion.go)
	inheritance *inherit.Reader   // reads what a fire inherits with items gained (inherit.go)
	debts       *makeup.Debts     // the make-up runs' registry work (firing's RunOwed)
	lead        *leader.Duties    // the leader's duties (job/internal/leader)
	prep        prepare.Prep      // ready to run the job's items (job/internal/prepare; its use prepare.go)
	counters    jobCounters       // behind JobStats (stats.go)
	backfills   backfill.Known    // the backfill's progress as known here (backfill.go)
	bad         stored.BadValues  // node versions reported as not decoding (stored.go)

	// The backfill's mechanisms (job/internal/backfilling; backfill.go).
	bfReg  *backfilling.Registry // its registry work
	bfWait backfilling.Waiters   // its fires waiting for items held here

	// The duties' mechanisms, each a room's (wireDuties, leader.go).
	office   *leader.Office     // the leader's duties as they run
	reshard  *reshard.Resharder // reshards, the wait for one, the books' repair
	departed *claims.Departures // the leader's queueing of departed servers' items
	claimer  *claims.Claimer    // claims from the failover queue, hands claims back

	// run is what its runs share in the execute stage (job/internal/execute).
	run execute.Job
	// firer is what the fire path's stages share (job/internal/firing).
	firer *firing.Firer
	// cfgNode is the job's config node as read and written here
	// (job/internal/confignode; confignode.go).
	cfgNode *confignode.Node[Config]
	// done is the completion stage of the fires (job/internal/completion).
	done *completion.Completer
	// assigned gets this instance's assignment (job/internal/assigned;
	// assignment.go).
	assigned *assigned.Source

	// dispatched is the latest scheduled fire the trigger dispatched
	// (unix ns; 0 after the schedule was set): the fires between it and
	// the next one dispatched were collapsed by the trigger after a stall,
	// and are owed (skippedBefore).
	dispatched atomic.Int64

	ctx  lifetimes        // the contexts stop cancels
	bg   *startstop.Group // every goroutine of the runner (goFunc), on the scheduler's workers
	kick runs.Kickers     // the runner's coalescing background tasks (kicked)
}

// lifetimes are a runner's contexts, made with it and cancelled by stop.
// runs and coord, each with its own lock, are the parents of the runs (runContext) and
// of the coordination (coordParent) under a session.
type lifetimes struct {
	life       context.Context // cancelled when stop begins: ends coordination waits
	cancelLife context.CancelFunc
	exec       context.Context // cancelled when shutdown's grace period ends
	cancelExec context.CancelCauseFunc
	// record is cancelled when stop has waited its last for background
	// work: completions (including the hand-over of items cut short) are
	// written until then.
	record       context.Context
	cancelRecord context.CancelFunc
	runs, coord  runs.SessionCtx
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
		r.firer.ClaimFailover()
	case kickFlags:
		r.checkFlags()
	case kickReshard:
		r.reshardOnRequest()
	case kickEpoch:
		r.assigned.NoteEpochFlag()
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
		fo:      claims.NewState(),
		lead:    leader.NewDuties(),
		bg:      startstop.NewOn(context.Background(), s.work.Do),
	}
	r.book = book.New(r.owed, book.Options{Log: r.log, MisfiresOwed: &r.counters.misfiresOwed, Now: s.opts.now, Lead: s.opts.fireLead, OnIdle: s.inst.ItemsIdle})
	r.setConfig(cfg)
	r.ctx.exec, r.ctx.cancelExec = context.WithCancelCause(context.Background())
	r.ctx.record, r.ctx.cancelRecord = context.WithCancel(context.Background())
	r.ctx.life, r.ctx.cancelLife = context.WithCancel(context.Background())
	r.run = execute.Job{Name: r.name, Log: r.log, Life: r.ctx.life, Retries: &r.counters.retries, Registry: r.rc, Paths: r.paths}
	r.elect = election.New(s.rc, r.paths.ElectionLatch(), r.paths.ElectionHost(), s.opts.serverID, election.Callbacks{
		OnElected: r.onElected,
		OnRevoked: r.onRevoked,
	}, r.log)
	r.wireDuties() // leader.go
	r.cfgNode = r.newConfigNode()
	r.marker = r.newMarker()
	r.reader = r.newReader()
	r.inheritance = r.newInheritance()
	r.debts = r.newDebts()
	r.held = r.newKeeper()
	r.bfReg = r.newBackfilling()
	r.done = r.newCompleter()
	r.firer = r.newFirer()
	r.held.Done = r.done
	r.assigned = r.newSource()
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
	turn := r.firer.Order.Enter() // on the trigger's goroutine: in fire order
	if !r.goFiring(func() {
		defer r.firer.Order.Leave(turn) // however the fire ends
		if err := r.prepareSync(); err != nil {
			r.log.Warn("preparing to fire", "fire", at, "err", err)
		}
		if !r.untilClaim(at, turn) {
			return
		}
		r.fireInTurn(at, skipped, turn)
	}) {
		r.firer.Order.Leave(turn)
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
		wake := r.firer.Order.Nap(turn)
		slept := r.firer.SleepUntil(at, idle)
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
	r.dispatched.Store(0) // a new schedule's fires start from its own next one
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
	return r.cache.WatchedAssumption() && r.config().Unmonitored
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
func (r *runner) setNecessary(ctx context.Context) { r.office.FlagReshard(ctx) }

// fireMissedWhileDown runs once, for this instance's items, the fires skipped while the
// connection was down. It takes a turn of the fire order after the fires
// dispatched before it: one of them, held up, may come before the fires
// skipped, and takes them in its own make-up run (fireInTurn); run first,
// this make-up run, from the skipped fires on, would have that fire find
// the item run here through it, and run nothing.
func (r *runner) fireMissedWhileDown(sess *regcenter.Session) {
	turn := r.firer.Order.Enter()
	defer r.firer.Order.Leave(turn)
	r.firer.Order.AwaitDue(turn, r.ctx.life.Done())
	// Released once: when the run has reserved its items, or as it
	// returns (fireAssigned does not on every path). Every call is on
	// this goroutine.
	unlock, held := r.firer.Order.Hold(), true
	release := func() {
		if held {
			held = false
			unlock()
			r.firer.Order.Leave(turn) // the debts it leaves take their turn after (Firer.RunOwed)
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
