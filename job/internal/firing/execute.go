package firing

import (
	"context"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/assume"
	"github.com/shardjob/shardjob/job/internal/backfilling"
	"github.com/shardjob/shardjob/job/internal/book"
	"github.com/shardjob/shardjob/job/internal/completion"
	"github.com/shardjob/shardjob/job/internal/deps"
	"github.com/shardjob/shardjob/job/internal/execute"
	claims "github.com/shardjob/shardjob/job/internal/failover"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/flags"
	"github.com/shardjob/shardjob/job/internal/inherit"
	"github.com/shardjob/shardjob/job/internal/makeup"
	"github.com/shardjob/shardjob/job/internal/marks"
	"github.com/shardjob/shardjob/job/internal/records"
	"github.com/shardjob/shardjob/job/internal/retry"
	"github.com/shardjob/shardjob/job/internal/runs"
	"github.com/shardjob/shardjob/job/internal/tracing"
	"github.com/shardjob/shardjob/listener"
	"github.com/shardjob/shardjob/regcenter"
)

// Executor is package job's side of a run, as River's executor calls the
// worker: it makes the run's context, builds the job's ShardingContext
// or RangeContext from a Call and calls the user's job under the job's
// timeout, a panic turned into an error. The Firer calls it; it calls
// nothing of the Firer back.
type Executor interface {
	// NewCtx is a run's context under parent (the session's runs).
	NewCtx(parent context.Context) RunCtx
	// Execute calls the job for c's item under ctx (an attempt's context,
	// derived from run).
	Execute(ctx context.Context, run RunCtx, c Call) error
	// ExecuteRange calls a range job for c's items First to Last.
	ExecuteRange(ctx context.Context, run RunCtx, c Call) error
	// Ranges reports whether the job runs ranges of items (a RangeJob),
	// Keyed whether its items come from data (an ItemLister).
	Ranges() bool
	Keyed() bool
}

// RunCtx is a run's context as the Firer holds it.
type RunCtx interface {
	execute.Ctx
	// Replace cancels the run for a later fire that replaces it.
	Replace()
	// End ends the run's context once the run has returned.
	End()
}

// Call is one call of the job: the facts of its run, as values.
type Call struct {
	Sess                             *regcenter.Session
	TaskID, ServerID                 string
	Fire, Through, MayHaveRunThrough time.Time
	Kind                             book.Kind
	// First and Last are the run's items (First alone for an item's
	// run); Param and Key the first's parameter and key, Keys a range's
	// keys in order (nil: the items do not come from data).
	First, Last  int
	Param, Key   string
	Keys         []string
	Total        int
	PerShard     int
	JobParameter string
	ParentErr    error
	Attempt      int
	Timeout      time.Duration
}

// Firer is what the fire path's stages share for one job, set once when
// the job's runner is made and read only after.
type Firer struct {
	Name     string
	ServerID func() string
	Book     *book.Book
	// Stage runs a run's attempts, Run makes a run's facts
	// (job/internal/execute).
	Stage *execute.Stage
	Run   *execute.Job
	// Inherit keeps the failed attempts of a run cut short after
	// failures, for this instance's make-up of the fire.
	Inherit *assume.Inherited
	// RunContext is the parent of the runs under a session.
	RunContext func(sess *regcenter.Session) context.Context
	Tracer     *tracing.Tracer // nil: tracing is off
	Listeners  []listener.FireListener
	Exec       Executor

	// What the leaves of a fire's start read and write (leaves.go).
	Log   *slog.Logger
	Now   func() time.Time // the scheduler's clock
	Lead  time.Duration    // how far ahead of its time a fire is dispatched
	Coord func(sess *regcenter.Session) (context.Context, context.CancelFunc)
	// Current is the job's config as it is now (the records of a
	// make-up run are read against it).
	Current   func() *Job
	Done      *completion.Completer
	Debts     *makeup.Debts
	Backfills *backfilling.Registry
	RC        regcenter.Center
	Paths     layout.Job
	ReportBad func(p string, st regcenter.Stat, data []byte, msg string, args ...any)
	// Parent is a parent job's facts by name (deps.Wait.Parent).
	Parent func(name string) (deps.Parent, error)
	// The sentinels of package job the leaves wrap or record: a run cut
	// short by the job's stop, an item list unreadable, a parent's fire
	// that did not succeed.
	Closed, ItemKeysErr, ParentFailed error
	// FiresExpired counts the fires dropped past the starting deadline.
	FiresExpired *atomic.Int64
	// The events package job raises, given plain values: fires dropped
	// past the starting deadline (detail: the items), a run skipped for
	// its parents.
	OnExpired      func(fires int, detail string, at time.Time)
	OnParentFailed func(items int, err error, at time.Time)

	// The run stage's parts (stage.go, mark.go, owed.go, claim.go).
	//
	// Order makes scheduled fires reserve in fire order; the Firer owns
	// it (the zero Order is ready), and the entries of package job take
	// their turns in it.
	Order        runs.Order
	Records      *records.Cache       // the items' records as known here
	Holds        *assume.Holds        // the running marks kept across fires
	Marker       *marks.Marker        // makes the running marks
	Claimer      *claims.Claimer      // claims from the failover queue, hands claims back
	Queue        *claims.State        // the failover queue as seen here
	Owed         *book.Ledger         // what items are owed here
	Flags        *flags.Flags         // this server's flags for the job
	Inheritance  *inherit.Reader      // reads again the records of items gained
	BackfillWait *backfilling.Waiters // backfill fires waiting for items held here
	// Life is cancelled when the job's stop begins: it ends the waits.
	Life context.Context
	// Timeout bounds a hand-back after a failed marking and a claim's
	// registry work (the reshard timeout).
	Timeout time.Duration
	// Until is closed at a time by the scheduler's clock.
	Until func(at time.Time) <-chan struct{}
	// Go runs a function on a goroutine of the job's runner, which its
	// stop waits for; false once stopping (nothing runs). Stopped
	// reports whether the runner is closed.
	Go      func(func()) bool
	Stopped func() bool
	// Ready returns the session to fire under, or false when this
	// instance must not fire now; Preempt waits while this instance's
	// health asks it to let others claim first (false: do not claim).
	Ready   func() (*regcenter.Session, bool)
	Preempt func(ctx context.Context) bool
	// FailoverClaims counts the items claimed from the failover queue.
	FailoverClaims *atomic.Int64
	// What a release starts that package job owns: a trigger queued while
	// items ran (on a goroutine of Go), and the failover kicker.
	Triggered    func()
	KickFailover func()
}

// TaskID is the id of job's fire at fire, as listeners and the job see it.
func TaskID(job string, fire time.Time) string {
	return job + "@" + strconv.FormatInt(fire.UnixMilli(), 10)
}

// ExecuteItem calls the job for one item of f and returns its result:
// the last attempt's, when the job retries failed runs (the attempts are
// job/internal/execute's).
func (fr *Firer) ExecuteItem(f *Fire, item int) completion.Result {
	at := f.FireOf(item)
	ctx := fr.Exec.NewCtx(fr.RunContext(f.Sess))
	defer ctx.End()
	through := fr.Book.Started(item, item, at, ctx.Replace)

	c := Call{Sess: f.Sess, TaskID: TaskID(fr.Name, at), ServerID: fr.ServerID(), Fire: at, Through: through, Kind: f.Kind,
		First: item, Last: item, Param: f.Params[item], Key: f.Keys[item], Total: f.Job.Total, JobParameter: f.Job.JobParameter,
		ParentErr: f.ParentErr, MayHaveRunThrough: fireplan.MayHaveRunThrough(f.MayHaveRun, item, at, through), Timeout: f.Job.Timeout}
	failed := f.FailedBefore(item, at)
	if failed > 0 {
		// This run takes the count on: the note it came from, if
		// this instance's own, is spent.
		fr.Inherit.Continued(item, at)
	}
	// A count continued from another owner: its retry node goes with
	// this run's completion.
	res := completion.Result{Item: item, Fire: at, Through: through, Kind: f.Kind, Begin: time.Now(), RetryNoted: failed > 0,
		Backfill: f.Backfill, BackfillVersion: -1}
	if v, ok := f.BackfillVersions[item]; ok {
		res.BackfillVersion = v
	}
	if f.Keys != nil && c.Key == "" {
		// An item without a key in the list in force: nothing to run.
		res.End = res.Begin
		return res
	}
	fr.Stage.Run(ctx, fr.runOf(f, c, f.Job.Retry), 1+failed, &res, func(tctx context.Context, attempt int) error {
		c.Attempt = attempt
		return fr.Exec.Execute(tctx, ctx, c)
	})
	if res.Halted != nil && res.FailedAttempts > 0 {
		// Cut short after failures (a lost session ended a retry's
		// wait): this instance's own make-up of the fire continues the
		// count, as another owner would from the retry node.
		fr.Inherit.NoteFailed(item, at, res.FailedAttempts)
	}
	return res
}

// ExecuteRange calls a range job for one run of f's items and returns a
// result per item. A range is not retried.
func (fr *Firer) ExecuteRange(f *Fire, run fireplan.ItemRun) []completion.Result {
	ctx := fr.Exec.NewCtx(fr.RunContext(f.Sess))
	defer ctx.End()
	through := fr.Book.Started(run.First, run.Last, run.Fire, nil)
	c := Call{Sess: f.Sess, TaskID: TaskID(fr.Name, run.Fire), ServerID: fr.ServerID(), Fire: run.Fire, Through: through, Kind: f.Kind,
		First: run.First, Last: run.Last, Param: f.Params[run.First], Total: f.Job.Total, PerShard: f.Job.PerShard,
		JobParameter: f.Job.JobParameter, MayHaveRunThrough: fireplan.RangeMayHaveRunThrough(f.MayHaveRun, run, through),
		Attempt: 1, Timeout: f.Job.Timeout}
	if f.Keys != nil {
		c.Key = f.Keys[run.First]
		c.Keys = make([]string, 0, run.Last-run.First+1)
		for it := run.First; it <= run.Last; it++ {
			c.Keys = append(c.Keys, f.Keys[it])
		}
	}
	res := completion.Result{Item: run.First, Fire: run.Fire, Through: through, Kind: f.Kind, Begin: time.Now()}
	fr.Stage.Run(ctx, fr.runOf(f, c, retry.Policy{}), 1, &res, func(tctx context.Context, _ int) error {
		return fr.Exec.ExecuteRange(tctx, ctx, c)
	})
	out := make([]completion.Result, 0, run.Last-run.First+1)
	for it := run.First; it <= run.Last; it++ {
		res.Item = it
		out = append(out, res)
	}
	return out
}

// runOf is the facts of c's run of f's items, as the execute stage takes
// them (execute.Job.Of).
func (fr *Firer) runOf(f *Fire, c Call, pol retry.Policy) execute.Run {
	var sched fireplan.Schedule
	if pol.Attempts > 0 && f.Job.SchedErr == nil {
		sched = f.Job.Sched
	}
	ev := listener.Execution{Job: fr.Name, TaskID: c.TaskID, ServerID: c.ServerID, Item: c.First, Kind: c.Kind.String(), FireTime: c.Fire}
	return fr.Run.Of(ev, f.Trace, c.First, c.Last, c.Through, pol, sched, f.Kind == book.Backfill, !f.Job.Unmonitored)
}

// TraceFire starts f's span when tracing is on (f.Trace is then set, for
// its items' spans) and returns the call that ends it.
func (fr *Firer) TraceFire(f *Fire) func() {
	f.Trace = fr.Tracer.StartFire(f.Sess.Ctx(), tracing.FireFacts{
		Job: fr.Name, Kind: f.Kind.String(), ServerID: fr.ServerID(), At: f.At, Items: len(f.Items),
	})
	if f.Trace == nil {
		return noTrace // a method value of nil would allocate
	}
	return f.Trace.End
}

// noTrace is what TraceFire returns when tracing is off.
func noTrace() {}

// FireStarted tells the fire listeners that f's items start here and
// returns the call that tells them the fire ended here.
func (fr *Firer) FireStarted(f *Fire) func() {
	ls := fr.Listeners
	if len(ls) == 0 || len(f.Items) == 0 {
		return noTrace
	}
	lf := listener.Fire{Job: fr.Name, TaskID: TaskID(fr.Name, f.At), FireTime: f.At, Kind: f.Kind.String(), ServerID: fr.ServerID(),
		Items: append([]int(nil), f.Items...), Begin: time.Now()}
	for _, l := range ls {
		l.FireStarted(lf)
	}
	return func() {
		lf.End = time.Now()
		for _, l := range ls {
			l.FireEnded(lf)
		}
	}
}
