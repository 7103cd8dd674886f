package job

import (
	"context"
	"fmt"
	"time"

	"github.com/shardjob/shardjob/job/internal/execute"
	"github.com/shardjob/shardjob/job/internal/firing"
	"github.com/shardjob/shardjob/job/internal/makeup"
)

// executor is the runner's side of a run (firing.Executor): it builds the
// job's ShardingContext or RangeContext from the fire path's Call and
// calls the user's Job, bounded by the job's timeout, a panic turned into
// an error.
type executor struct{ r *runner }

// NewCtx is a run's context under parent (runCtx).
func (e executor) NewCtx(parent context.Context) firing.RunCtx { return newRunCtx(parent) }

// Ranges reports whether the job runs ranges of items.
func (e executor) Ranges() bool { _, ok := e.r.job.(RangeJob); return ok }

// Keyed reports whether the job's items come from data.
func (e executor) Keyed() bool { _, ok := e.r.job.(ItemLister); return ok }

// Execute calls the job for c's item with ctx bounded by c.Timeout (0:
// unbounded), and its ownership check bounded the same way: an execution
// that outlives its deadline fails with ErrExecutionTimeout
// (execute.Bounded).
func (e executor) Execute(ctx context.Context, run firing.RunCtx, c firing.Call) error {
	sc := e.shardingContext(run, &c)
	sc.ParentErr = c.ParentErr
	return execute.Bounded(ctx, c.Timeout, ErrExecutionTimeout, func(ctx context.Context, bounded bool) error {
		if bounded {
			sc.owner = &ownership{sess: sc.owner.sess, ctx: ctx}
		}
		return e.call(ctx, sc)
	})
}

// ExecuteRange calls the range job for c's items First to Last, bounded
// as Execute is.
func (e executor) ExecuteRange(ctx context.Context, run firing.RunCtx, c firing.Call) error {
	per := int64(max(c.PerShard, 1))
	rc := RangeContext{ShardingContext: e.shardingContext(run, &c),
		First: c.First, Last: c.Last, Start: int64(c.First) * per, End: int64(c.Last+1) * per, Keys: c.Keys}
	return execute.Bounded(ctx, c.Timeout, ErrExecutionTimeout, func(ctx context.Context, bounded bool) error {
		if bounded {
			rc.owner = &ownership{sess: rc.owner.sess, ctx: ctx}
		}
		return e.callRange(ctx, rc)
	})
}

// shardingContext is the job's view of c's run.
func (e executor) shardingContext(run firing.RunCtx, c *firing.Call) ShardingContext {
	return ShardingContext{
		JobName: e.r.name, TaskID: c.TaskID, FireTime: c.Fire, Through: c.Through,
		ShardingTotalCount: c.Total, Item: c.First, ItemParameter: c.Param, ItemKey: c.Key,
		JobParameter: c.JobParameter, Kind: Kind(c.Kind.String()), ServerID: c.ServerID,
		MayHaveRunThrough: c.MayHaveRunThrough, owner: run.(*runCtx).owner(c.Sess), Attempt: c.Attempt,
	}
}

// call runs the job, turning a panic into an error.
func (e executor) call(ctx context.Context, sc ShardingContext) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("job %q item %d panicked: %v", sc.JobName, sc.Item, p)
		}
	}()
	e.r.counters.executing.Add(1)
	defer e.r.counters.executing.Add(-1)
	return e.r.job.Execute(ctx, sc)
}

// callRange runs the range, turning a panic into an error.
func (e executor) callRange(ctx context.Context, rc RangeContext) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("job %q items %d-%d panicked: %v", rc.JobName, rc.First, rc.Last, p)
		}
	}()
	return e.r.job.(RangeJob).ExecuteRange(ctx, rc)
}

// newFirer returns what the runner's fire path shares (job/internal/firing),
// set once: the Firer's parts are the runner's and a's, and the events it
// raises are built here.
func (r *runner) newFirer(a *active) *firing.Firer {
	s := r.s
	return &firing.Firer{Name: r.name, ServerID: r.serverID, Book: r.book, Stage: s.exec, Run: &a.run, Inherit: &a.inherit,
		RunContext: r.runContext, Tracer: s.opts.tracer, Listeners: s.opts.fireListeners, Exec: executor{r},
		Log: r.log, Now: s.opts.now, Lead: s.opts.fireLead, Coord: r.coordCtx, Current: func() *firing.Job { return r.config().fireJob() },
		Done: a.done, Debts: a.debts, Backfills: a.bfReg, RC: r.rc, Paths: r.paths, ReportBad: r.reportBadValue, Parent: r.parentOf,
		Closed: ErrSchedulerClosed, ItemKeysErr: ErrItemKeys, ParentFailed: ErrParentFailed, FiresExpired: &r.counters.firesExpired,
		OnExpired: func(fires int, detail string, at time.Time) {
			s.emit(Event{Kind: EventFiresExpired, Job: r.name, Units: fires, Detail: detail, At: at})
		},
		OnParentFailed: func(items int, err error, at time.Time) {
			s.emit(Event{Kind: EventParentFailed, Job: r.name, Units: items, Detail: err.Error(), Err: err, At: at})
		},
		Records: r.records, Holds: &a.holds, Marker: a.marker, Claimer: a.claimer, Queue: a.fo, Owed: r.owed, Flags: r.flags,
		Inheritance: a.inheritance, BackfillWait: &a.bfWait, Life: r.ctx.life, Timeout: s.opts.reshardTimeout, Until: s.exec.Until,
		Go: r.goFunc, Stopped: r.isClosed, Ready: r.readyToFire, Preempt: s.preemptWait, FailoverClaims: &r.counters.failoverClaims,
		Triggered: r.fireTriggered, KickFailover: func() { r.kick.Kick(kickFailover) },
	}
}

// newDebts returns the runner's registry work of make-up runs
// (job/internal/makeup).
func (r *runner) newDebts(a *active) *makeup.Debts {
	return &makeup.Debts{RC: r.rc, Paths: r.paths, Book: r.book, Records: a.reader, Known: r.records, Log: r.log}
}
