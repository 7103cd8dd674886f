package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/internal/startstop"
	"github.com/shardjob/shardjob/job/internal/execute"
	"github.com/shardjob/shardjob/job/internal/fleet"
	"github.com/shardjob/shardjob/job/internal/instance"
	"github.com/shardjob/shardjob/job/internal/journal"
	"github.com/shardjob/shardjob/job/internal/placement"
	"github.com/shardjob/shardjob/job/internal/process"
	"github.com/shardjob/shardjob/job/internal/registration"
	"github.com/shardjob/shardjob/job/internal/roster"
	"github.com/shardjob/shardjob/job/internal/runs"
	"github.com/shardjob/shardjob/job/internal/trigger"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/sharding"
)

// Scheduler runs jobs on one registry session. Create one per process with
// [NewScheduler], add jobs, then Start. It is safe for concurrent use.
type Scheduler struct {
	rc   regcenter.Center
	opts options
	log  *slog.Logger
	trig *trigger.Trigger

	jobs *roster.Roster[*runner] // the runners by name, the state, the awaited names

	ctx   context.Context  // the scheduler's life (bg's): cancelled at the end of Shutdown
	bg    *startstop.Group // the scheduler's own goroutines (spawn)
	unsub func()

	suspended atomic.Bool // connection to the registry lost: fire nothing
	// startReturned is when (unix ns, the fire clock) Start returned; 0
	// until then. Fires due before it may be left to a later fire
	// (runner.overtakenAtStart).
	startReturned atomic.Int64

	sessionsLost atomic.Int64 // sessions replaced by a new one (Stats)
	alarms       atomic.Int64 // EventAlarm raised (Stats)

	me process.Holder // this process

	placer  *placement.Placer // commits this scheduler's reshards
	journal *journal.Journal  // this process's completion journal (package journal, its use job/internal/completion); nil when off
	inst    *instance.Node    // this instance's node in the namespace (job/internal/instance; its wiring instance.go)
	gates   trigger.Gates     // the times fires wait for
	clock   trigger.Clock     // the clock fires go by (fireClock), made once
	work    runs.Workers      // the goroutines of the jobs' fires and runs
	alert   alerting          // late fires and jobs not run (alertbook.go)
	// exec runs the attempts of every job's runs (job/internal/execute).
	exec *execute.Stage
}

// startConcurrency is how many jobs Start registers at once (a batch of
// new jobs' trees counting as one). A new job costs its share of one
// transaction and two watches; with 256 in flight, 10,000 jobs register as
// fast as the registry answers (16 left it idle between answers, 1,024 gained
// nothing more).
const startConcurrency = 256

// NewScheduler returns a scheduler on rc. The scheduler does not own rc:
// close it after Shutdown.
func NewScheduler(rc regcenter.Center, opts ...Option) (*Scheduler, error) {
	if rc == nil {
		return nil, fmt.Errorf("%w: nil registry center", ErrInvalidOption)
	}
	o := options{logger: slog.Default(), reshardTimeout: 10 * time.Second, recordInterval: DefaultRecordInterval, fireLead: DefaultFireLead,
		journalOrphanAge: journal.OrphanAge, journalSweep: journal.Sweep, now: time.Now, faultTolerance: DefaultFaultTolerance}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if o.serverID == "" {
		o.serverID = process.DefaultServerID()
	}
	if o.clock == nil {
		o.clock = clockOf(o.now)
	}
	// The jobs' transactions are committed in groups: an instance's jobs
	// firing at the same second mark, and then complete, their items in a
	// few transactions rather than one each (regcenter.GroupCommit).
	rc = regcenter.GroupCommit(rc)
	s := &Scheduler{rc: rc, opts: o, me: process.This(), jobs: roster.New(roster.Config[*runner]{
		Name:       runnerName,
		Parents:    func(r *runner) []string { return r.config().parents() },
		SetAwaited: func(r *runner) { r.records.SetAwaited() },
		Closed:     ErrSchedulerClosed, Started: ErrAlreadyStarted, Duplicate: ErrDuplicateJob,
	})}
	if o.process != nil {
		s.me = *o.process
	}
	s.log = o.logger.With("server", o.serverID)
	if !o.noJournal {
		s.journal = journal.New(rc, s.me.Token, s.log)
	}
	s.bg = startstop.New(context.Background())
	s.ctx = s.bg.Context()
	s.clock = triggerClock{s.fireClock()}
	s.trig = trigger.New(s.clock, o.fireLead)
	s.placer = placement.NewPlacer(s.ctx, rc, s.log)
	s.inst = s.newInstance()
	s.initAlerts()
	s.exec = &execute.Stage{
		Listeners: o.listeners, Alerts: s.alert.book, Now: o.now,
		Until:  func(t time.Time) <-chan struct{} { return s.gates.Until(s.clock, t) },
		Closed: ErrSchedulerClosed, Replaced: replacedError,
	}
	return s, nil
}

// ServerID returns the id this scheduler registers under.
func (s *Scheduler) ServerID() string { return s.opts.serverID }

// Add adds a job. Before Start it only validates and records the job; after
// Start it also registers the job in the registry within ctx. The config is
// validated (every problem reported at once); a second job with the same
// name is ErrDuplicateJob, and one whose schedule has no fire left (an end
// that has passed, a limit used up) is an error wrapping ErrScheduleEnded
// (see Config.CheckEnded).
func (s *Scheduler) Add(ctx context.Context, cfg Config, j Job) error {
	if j == nil {
		return fmt.Errorf("%w: job %q: nil Job", ErrInvalidConfig, cfg.Name)
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := cfg.CheckEnded(s.opts.now()); err != nil {
		return err
	}
	cfg = cfg.WithDefaults()
	if _, err := sharding.Lookup(cfg.ShardingStrategy); err != nil {
		return fmt.Errorf("%w: job %q: %w", ErrInvalidConfig, cfg.Name, err)
	}
	var check func([]*runner) error
	if cfg.After != "" {
		check = func(rs []*runner) error { return checkDependencies(rs, &cfg) }
	}
	var r *runner
	started, err := s.jobs.Add(cfg.Name, check, func() *runner { r = newRunner(s, cfg, j); return r })
	if err != nil || !started {
		return err
	}
	if err := r.start(ctx); err != nil {
		s.jobs.Delete(cfg.Name)
		r.stop(ctx)
		return err
	}
	return nil
}

// Start registers every added job in the registry and starts firing. A
// registration step that fails because the connection dropped or the
// session ended is tried again, for up to two session timeouts and within
// ctx. If a job cannot register, Start undoes what it did and returns the
// error. Before it returns, it waits (at most 3 s in all) for the reshards
// that its jobs firing within that time need: their leaders answer the
// join at once, and the first fires after Start find their items placed
// rather than wait for them. A leader that does not answer in time leaves
// its reshard to the fire.
func (s *Scheduler) Start(ctx context.Context) error {
	runners, err := s.jobs.Start(func(rs []*runner) error { return checkDependencies(rs, nil) })
	if err != nil {
		return err
	}
	s.unsub = s.rc.OnSession(s.onSession)
	if err := s.inst.Start(ctx); err != nil {
		s.undoStart()
		return err
	}
	s.startHealth()
	s.startAlerts(ctx)
	// The scheduler's loops, like every goroutine it owns, go through
	// spawn: Shutdown waits for them.
	s.spawn(func() { s.trig.Run(s.ctx) })
	s.spawn(s.reconcileLoop)
	s.spawn(func() { s.work.ReapEvery(s.ctx, runs.ReapPeriod) })
	existing := fleet.Existing(ctx, s.rc, len(runners), s.log)
	if existing != nil {
		// A new namespace gets its (empty) load table now, not from a
		// rebuild in each job's first reshard, right before its first fire.
		if err := placement.SeedTable(ctx, s.rc, slices.Collect(maps.Keys(existing))); err != nil {
			s.log.Warn("the first reshard rebuilds the load table instead", "err", err)
		}
	}
	// New jobs' trees are made several to a transaction (createJobs), and
	// the jobs that existed already are joined several to a read and a
	// transaction (joinJobs), one that cannot be node by node: one read of
	// the namespace's jobs says which are which. Then each job arms its
	// watches.
	err = fleet.Starter[*runner]{InFlight: startConcurrency, PerTxn: treesPerTxn,
		Name: runnerName,
		Create: func(ctx context.Context, batch []*runner) (sess *regcenter.Session, made map[*runner]bool, err error) {
			err = registration.Retry(ctx, s.log, s.startRetryBound(), "registering new jobs", func() (err error) {
				sess = s.rc.Session()
				made, err = createJobs(ctx, s.rc, batch)
				return err
			})
			return sess, made, err
		},
		Join: func(ctx context.Context, batch []*runner) map[*runner]func(context.Context) error {
			return joinJobs(ctx, s.rc, batch, s.log)
		},
		Register: func(ctx context.Context, r *runner, sess *regcenter.Session, made bool) error {
			return r.startRegistered(ctx, sess, made)
		},
	}.Start(ctx, runners, existing)
	if err != nil {
		s.undoStart()
		return err
	}
	s.inst.Started(ctx)
	s.settle(ctx, runners)
	s.startReturned.Store(s.opts.now().UnixNano())
	return nil
}

// undoStart shuts down what a failed Start did.
func (s *Scheduler) undoStart() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		s.log.Warn("undo of failed start", "err", err)
	}
}

// runnersSnapshot returns the runners, in name order.
func (s *Scheduler) runnersSnapshot() []*runner { return s.jobs.Sorted() }

// runner returns the runner of job name, or nil.
func (s *Scheduler) runner(name string) *runner { return s.jobs.Get(name) }

// runnerName is the name of r's job, as the rooms that hold runners ask it.
func runnerName(r *runner) string { return r.name }

// onSession reacts to the registry center's session changes.
func (s *Scheduler) onSession(ev regcenter.SessionEvent) {
	switch ev.Type {
	case regcenter.SessionSuspended:
		s.suspended.Store(true)
	case regcenter.SessionReconnected:
		s.suspended.Store(false)
		for _, r := range s.runnersSnapshot() {
			r.goFunc(func() { r.fireMissedWhileDown(ev.Session) })
		}
	case regcenter.SessionNew:
		s.suspended.Store(false)
		s.sessionsLost.Add(1)
		s.spawn(func() {
			ctx, cancel := context.WithTimeout(s.ctx, s.opts.reshardTimeout)
			defer cancel()
			if err := s.inst.Publish(ctx); err != nil {
				s.log.Warn("re-registering the instance under the new session", "err", err)
			}
			s.alert.cand.Campaign(ctx)
		})
		// Re-register every job under the new session (I3: a session
		// expiry never stops a job for good).
		for _, r := range s.runnersSnapshot() {
			r.goFunc(func() {
				// Records deferred under the session that ended go first:
				// its marks are gone, and another instance may take the
				// items.
				if a := r.activeIfMade(); a != nil { // a job that never ran defers no record
					ctx, cancel := context.WithTimeout(r.ctx.life, s.opts.reshardTimeout)
					a.done.FlushAll(ctx)
					cancel()
				}
				r.reregister(ev.Session)
			})
		}
	}
}

// Shutdown stops firing, lets running items finish until ctx ends and then
// cancels them, hands unfinished items over, leaves leadership and removes
// this instance's nodes so the others reshard at their next fire. It
// returns ctx's error if items had to be cancelled or cleanup did not
// finish in time; the error names what waited (a run that ignores its
// context, a completion or a resign waiting on the registry). It returns
// within ctx's deadline and half a second, whatever the registry does:
// with the registry gone, what could not be written is left to the
// session's expiry. With no deadline on ctx, the cleanup's registry calls
// are bounded by the session timeout. Jobs that failed alike are one line
// of the error; [JobsNotStopped] names them all. It is safe to call more
// than once.
func (s *Scheduler) Shutdown(ctx context.Context) error {
	runners, ok := s.jobs.Close()
	if !ok {
		return nil
	}
	for _, r := range runners {
		s.trig.Remove(r.name)
	}
	var errs []error
	stop := func(ctx context.Context, r *runner) error { return r.stop(ctx) }
	if err := fleet.StopAll(ctx, runners, runnerName, stop); err != nil {
		errs = append(errs, err)
	}
	s.work.Close(ctx) // what outlives ctx, stop reported: runs that ignore their context
	if s.journal != nil {
		// Every job has written its records: the journal says nothing
		// they do not (or stays, for a sweep to fold, if one could not).
		jctx, jcancel := cleanupContext(ctx, s.opts.reshardTimeout)
		if err := s.journal.RemoveIfCovered(jctx); err != nil {
			s.log.Debug("removing the completion journal", "err", err)
		}
		jcancel()
	}
	if s.unsub != nil {
		s.unsub()
	}
	s.inst.Stop()
	s.stopAlerts(ctx)
	s.unpublishInstance(ctx)
	// Every goroutine spawn started ends with the scheduler's context: the
	// wait is bounded by their own waits, each with a deadline.
	s.bg.Close()
	s.bg.Cancel(ErrSchedulerClosed)
	wctx, wcancel := cleanupContext(ctx, s.opts.reshardTimeout)
	defer wcancel()
	if err := s.bg.Wait(wctx); err != nil {
		errs = append(errs, fmt.Errorf("the scheduler's background work: %w", err))
	}
	return errors.Join(errs...)
}

// JobsNotStopped returns the names of the jobs that did not stop cleanly,
// according to err, an error [Scheduler.Shutdown] returned (none if it
// is nil or says nothing of jobs).
func JobsNotStopped(err error) []string { return fleet.Jobs(err) }

// spawn runs f on a goroutine owned by the scheduler while it runs, and
// reports whether it did (not before Start, nor once Shutdown has begun).
func (s *Scheduler) spawn(f func()) bool { return s.jobs.Spawn(s.bg, f) }

// Remove stops the job on this instance, as Shutdown does for every job,
// and forgets it. Other instances take its items at their next fire.
func (s *Scheduler) Remove(ctx context.Context, name string) error {
	r := s.runner(name)
	if r == nil {
		return fmt.Errorf("%w: %q", ErrUnknownJob, name)
	}
	return s.detach(ctx, r)
}

func (s *Scheduler) detach(ctx context.Context, r *runner) error {
	if !s.jobs.Detach(r) {
		return nil
	}
	s.trig.Remove(r.name)
	return r.stop(ctx)
}

// removeRunner stops r in the background of a flag or a config deletion.
// It runs on one of r's own goroutines, so it must not wait for them: the
// stop runs on a scheduler goroutine instead.
func (s *Scheduler) removeRunner(r *runner, removedFromCluster bool) {
	r.book.MarkRemoved(removedFromCluster)
	s.spawn(func() {
		ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
		defer cancel()
		if err := s.detach(ctx, r); err != nil {
			r.log.Warn("stopping job", "err", err)
		}
	})
}

func (s *Scheduler) removeRemoved(r *runner) {
	r.log.Info("job removed from the cluster: stopping it here")
	s.removeRunner(r, true)
}

// Jobs returns the names of the added jobs, sorted.
func (s *Scheduler) Jobs() []string { return s.jobs.Names() }
