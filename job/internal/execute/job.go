package execute

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/marks"
	"github.com/shardjob/shardjob/job/internal/retry"
	"github.com/shardjob/shardjob/job/internal/tracing"
	"github.com/shardjob/shardjob/listener"
	"github.com/shardjob/shardjob/regcenter"
)

// Job is what the runs of one job share: its facts besides each run's
// own. Every field is set when the job's runner is made, and read only
// after.
type Job struct {
	// Name is the job's name, which its runs' spans carry.
	Name string
	// Log is the job's logger; Life ends when the job stops here (a retry
	// that waits gives up); Retries counts its attempts after a failure.
	Log     *slog.Logger
	Life    context.Context
	Retries *atomic.Int64
	// Registry and Paths are where a run's failed attempts are noted
	// before a retry waits (marks.NoteRetry).
	Registry regcenter.Center
	Paths    layout.Job
}

// Of is the run of items first to last (first alone for an item's run),
// told to the listeners as ev, whose fires are ev.FireTime through
// through, under the fire's span trace (nil: tracing off) and the retry
// policy pol. With a policy (Attempts), sched is the job's schedule (nil:
// none known), past says the run stands for a fire long past (a
// backfill's), and a monitored run of one item notes its count before a
// wait, for whoever takes the fire over after a crash (a range's
// restarts: one node per item would be a write per item).
func (j *Job) Of(ev listener.Execution, trace *tracing.Fire, first, last int, through time.Time, pol retry.Policy,
	sched fireplan.Schedule, past, monitored bool) Run {
	run := Run{
		Event: ev,
		Trace: trace,
		Facts: tracing.RunFacts{Job: j.Name, Kind: ev.Kind, ServerID: ev.ServerID, First: first, Last: last, At: ev.FireTime, Through: through},
		Retry: pol,
		Log:   j.Log, Life: j.Life, Retries: j.Retries,
	}
	if pol.Attempts > 0 {
		run.Schedule, run.Past = sched, past
		if first == last && monitored {
			item, fire := first, ev.FireTime
			run.Note = func(ctx context.Context, failed int) error {
				return marks.NoteRetry(ctx, j.Registry, j.Paths, item, fire, failed)
			}
		}
	}
	return run
}

// Bounded calls call under ctx bounded by timeout (0 or less: ctx itself),
// telling it whether its context is bounded (the caller bounds what else
// it checks, the item's ownership, the same way). A call that outlives
// its deadline fails with cause (job.ErrExecutionTimeout), whatever it
// returned: it is a failure of the fire, not a fire cut short (only an end
// of ctx itself is that).
func Bounded(ctx context.Context, timeout time.Duration, cause error, call func(ctx context.Context, bounded bool) error) error {
	if timeout <= 0 {
		return call(ctx, false)
	}
	tctx, cancel := context.WithTimeoutCause(ctx, timeout, cause)
	defer cancel()
	err := call(tctx, true)
	if ctx.Err() == nil && errors.Is(context.Cause(tctx), cause) {
		if err == nil {
			return fmt.Errorf("%w after %v", cause, timeout)
		}
		return fmt.Errorf("%w after %v: %w", cause, timeout, err)
	}
	return err
}
