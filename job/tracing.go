package job

import (
	"fmt"

	"github.com/shardjob/shardjob/job/internal/tracing"
	"go.opentelemetry.io/otel/trace"
)

// Tracing: with WithTracerProvider, every fire on an instance is a span
// and every item run a child span of it, whose context the job's Execute
// gets. Without it the fire path does nothing more than before: no span,
// no attribute, no allocation (the checks below are a nil pointer's).

// The names of the spans a scheduler makes (see WithTracerProvider).
const (
	// FireSpanName names the span of one fire on one instance: from the
	// start of its items' runs here to their completion.
	FireSpanName = tracing.FireSpanName
	// ItemSpanName names the span of one item's run (one run of
	// consecutive items for a RangeJob), a child of its fire's span.
	ItemSpanName = tracing.ItemSpanName
)

// The attributes of the spans a scheduler makes.
const (
	// AttrJob is the job's name.
	AttrJob = tracing.AttrJob
	// AttrFireTime is the fire's time, RFC 3339 with nanoseconds, in UTC.
	// On an item's span it is the fire the item's run stands for, which
	// for a make-up run (misfire, failover) may be earlier than the fire
	// span's.
	AttrFireTime = tracing.AttrFireTime
	// AttrKind is the run's kind: "fire", "misfire", "failover", ...
	// (see Kind).
	AttrKind = tracing.AttrKind
	// AttrServerID is the instance's server id (see WithServerID).
	AttrServerID = tracing.AttrServerID
	// AttrItemCount is, on a fire's span, how many items run here.
	AttrItemCount = tracing.AttrItemCount
	// AttrFailedItems is, on a fire's span, how many of them failed or
	// were cut short; set when it is not 0.
	AttrFailedItems = tracing.AttrFailedItems
	// AttrItem is, on an item's span, the sharding item (for a RangeJob,
	// the first item of the run).
	AttrItem = tracing.AttrItem
	// AttrLastItem is, on the span of a RangeJob's run of several items,
	// the last item of the run.
	AttrLastItem = tracing.AttrLastItem
	// AttrThrough is, on an item's span, the latest fire the run stands
	// for (see ShardingContext.Through).
	AttrThrough = tracing.AttrThrough
	// AttrHalted is, on an item's span, true when the run was cut short
	// (shutdown, lost ownership of the item): it is not completed and
	// runs again elsewhere or later.
	AttrHalted = tracing.AttrHalted
	// AttrAttempt is an item span's try of its fire's run: 1 for the
	// first, 2 for the first retry (Config.Retry).
	AttrAttempt = tracing.AttrAttempt
	// AttrRetried is set on an item span whose failure another attempt
	// follows: the fire's failed_items does not count it.
	AttrRetried = tracing.AttrRetried
)

// WithTracerProvider turns tracing on: every fire that runs items on this
// instance gets a span named FireSpanName (attributes AttrJob,
// AttrFireTime, AttrKind, AttrServerID, AttrItemCount), and every item
// run a child span named ItemSpanName (AttrJob, AttrItem, AttrKind,
// AttrFireTime, AttrThrough, AttrServerID), ended with the run: a failed
// run's error is recorded and its status set to Error, a completed one's
// to Ok. The context Job.Execute gets carries the item's span, so that
// spans the job starts are its children and the script and HTTP job
// types pass it on (the TRACEPARENT variable, the traceparent header).
//
// A fire's span has no parent. Default: off, and then the fire path
// makes no span and allocates nothing for tracing.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) error {
		if tp == nil {
			return fmt.Errorf("%w: nil tracer provider", ErrInvalidOption)
		}
		o.tracer = tracing.New(tp)
		return nil
	}
}
