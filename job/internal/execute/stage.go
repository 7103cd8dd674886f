package execute

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/job/internal/alert"
	"github.com/shardjob/shardjob/job/internal/completion"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/retry"
	"github.com/shardjob/shardjob/job/internal/tracing"
	"github.com/shardjob/shardjob/listener"
)

// Stage is what the runs of every job of a scheduler share; what is one
// job's (its log, its life, its counter) comes with each Run. Every field
// is set when it is made, and read only after.
type Stage struct {
	Listeners []listener.Listener
	Alerts    *alert.Book
	// Now is the scheduler's clock: when a late fire's run ended, and when
	// a retry is decided.
	Now func() time.Time
	// Until returns a channel closed at t (the scheduler's timers).
	Until func(t time.Time) <-chan struct{}
	// Closed is why a run cut short by the job's stop did not complete
	// (job.ErrSchedulerClosed).
	Closed error
	// Replaced is the error a run replaced by a later fire is recorded
	// with, given what the job returned.
	Replaced func(err error) error
}

// Ctx is a run's context as the attempts read it.
type Ctx interface {
	context.Context
	// Replaced reports whether a later fire replaced the run
	// (OverlapReplace): done with that as its cause.
	Replaced() bool
	// TakeOutput closes the run's output slot and returns what the run
	// recorded (nil: nothing).
	TakeOutput() json.RawMessage
}

// Run is one run's facts. Event is the listeners' view of it, its Begin,
// End, Err, Output and Attempt set here for each attempt.
type Run struct {
	Event listener.Execution
	// Trace is the fire's span, Facts the run's (nil Trace: tracing off).
	Trace *tracing.Fire
	Facts tracing.RunFacts
	// Retry is the job's retry policy (no Attempts: no retry), Schedule
	// its schedule (nil: none known), which says when the item's next
	// fire comes: a retry never waits past it.
	Retry    retry.Policy
	Schedule fireplan.Schedule
	// Past: the run stands for a fire long past (a backfill's), so its
	// retries yield to the item's next fire from now, not from its own.
	Past bool
	// Log is the job's logger. Life ends when the job stops here: a retry
	// that waits gives up. Retries counts the job's attempts after a
	// failure.
	Log     *slog.Logger
	Life    context.Context
	Retries *atomic.Int64
	// Note, when set, writes the fire's failed attempts before a retry
	// waits (marks.NoteRetry): a crash during the wait leaves the count
	// to whoever takes the fire over.
	Note func(ctx context.Context, failed int) error
}

// Call is one attempt of a run: the job called under ctx, told its
// attempt (1 for the first).
type Call func(ctx context.Context, attempt int) error

// Run runs the attempts of run under ctx, from attempt first (a failover
// run continues its fire's count), until one does not fail, the policy
// has no attempt left, the retry would wait past the item's next fire,
// or the run is cut short; res gets the outcome (Err, Halted, End,
// FailedAttempts) of the last. res.Fire is the fire whose lateness the
// runs end. A retry waits with the item reserved and marked here.
func (s *Stage) Run(ctx Ctx, run Run, first int, res *completion.Result, call Call) {
	// A late fire is the fire's, not an attempt's: armed once, ended with
	// the last attempt.
	job := run.Event.Job
	s.Alerts.Begin(job, res.Fire)
	defer func() { s.Alerts.End(job, res.Fire, res.Err == nil && res.Halted == nil, s.Now()) }()
	ev := run.Event
	for attempt := first; ; attempt++ {
		ev.Begin, ev.Attempt, ev.End, ev.Err, ev.Output = time.Now(), attempt, time.Time{}, nil, nil
		for _, l := range s.Listeners {
			l.BeforeExecution(ev)
		}
		tctx, span := run.Trace.StartItem(ctx, run.Facts)
		res.Err = call(tctx, attempt)
		res.End = time.Now()
		if ctx.Replaced() {
			// Replaced by a later fire: this fire ran, and failed.
			res.Err = s.Replaced(res.Err)
		} else if ctx.Err() != nil {
			res.Halted = context.Cause(ctx)
			res.FailedAttempts = attempt - 1
		}
		var next step
		if res.Err != nil && res.Halted == nil && !ctx.Replaced() {
			next = s.next(run, attempt)
		}
		run.Trace.EndAttempt(span, attempt, res.Err, res.Halted, next.retries())
		ev.End, ev.Err = res.End, res.Err
		ev.Output = ctx.TakeOutput()
		for _, l := range s.Listeners {
			l.AfterExecution(ev)
		}
		if res.Err != nil && res.Halted == nil {
			if f := run.Facts; f.Last != f.First {
				run.Log.Warn("range failed", "items", fmt.Sprintf("%d-%d", f.First, f.Last), "fire", ev.FireTime, "kind", ev.Kind, "err", res.Err)
			} else {
				run.Log.Warn("item failed", "item", ev.Item, "fire", ev.FireTime, "kind", ev.Kind, "attempt", attempt, "err", res.Err)
			}
		}
		if !next.retries() || !s.await(ctx, run, res, ev, next) {
			return
		}
	}
}

// step is what follows a failed attempt (next).
type step struct {
	decision retry.Decision
	at       time.Time // when the next attempt starts (Retry), or would have (Yield)
}

// retries reports whether another attempt follows.
func (st step) retries() bool { return st.decision == retry.Retry }

// next decides what follows the failure of run's attempt: another attempt
// after the policy's wait, unless the item's next fire (after the latest
// fire the run stands for) comes first, when the retry yields to it. A
// job without a policy stops at once.
func (s *Stage) next(run Run, attempt int) step {
	if run.Retry.Attempts == 0 {
		return step{}
	}
	ev := run.Event
	var nextFire time.Time
	if run.Schedule != nil {
		last := run.Facts.Through
		if last.Before(ev.FireTime) {
			last = ev.FireTime
		}
		if now := s.Now(); run.Past && last.Before(now) {
			last = now
		}
		nextFire = run.Schedule.Next(last)
	}
	d, at := run.Retry.Next(attempt, s.Now(), nextFire, rand.Float64())
	switch d {
	case retry.Yield:
		run.Log.Warn("retry yields to the item's next fire", "item", ev.Item, "fire", ev.FireTime, "attempt", attempt,
			"retryAt", at, "nextFire", nextFire)
	case retry.Stop:
		if attempt > 1 {
			run.Log.Warn("item failed on its last attempt", "item", ev.Item, "fire", ev.FireTime, "attempts", attempt)
		}
	}
	return step{decision: d, at: at}
}

// await waits, under the run's context, for the next attempt's time and
// reports whether it may start. The item stays reserved here and marked
// running meanwhile, so no other run of it starts, here or elsewhere. A
// wait the run's context ends (a lost session, a later fire replacing it,
// shutdown's deadline) or that the job's stop ends leaves res as a run cut
// short (handed over as any other) or, replaced, a failure.
func (s *Stage) await(ctx Ctx, run Run, res *completion.Result, ev listener.Execution, st step) bool {
	if run.Note != nil {
		if err := run.Note(ctx, ev.Attempt); err != nil {
			run.Log.Warn("the retry's count was not written: a crash during the wait would start it again", "item", ev.Item,
				"fire", ev.FireTime, "attempt", ev.Attempt, "err", err)
		} else {
			res.RetryNoted = true
		}
	}
	var cause error
	select {
	case <-s.Until(st.at):
		if ctx.Err() == nil && run.Life.Err() == nil {
			run.Retries.Add(1)
			run.Log.Info("retrying item", "item", ev.Item, "fire", ev.FireTime, "attempt", ev.Attempt+1)
			return true
		}
		cause = context.Cause(ctx)
	case <-ctx.Done():
		cause = context.Cause(ctx)
	case <-run.Life.Done():
	}
	switch {
	case ctx.Replaced():
		res.Err = s.Replaced(res.Err)
	case cause != nil:
		res.Halted, res.FailedAttempts = cause, ev.Attempt
	default:
		res.Halted, res.FailedAttempts = s.Closed, ev.Attempt
	}
	run.Log.Info("retry given up: the run was cut short while it waited", "item", ev.Item, "fire", ev.FireTime,
		"attempt", ev.Attempt, "cause", context.Cause(ctx))
	return false
}
