package job

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
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
	FireSpanName = "shardjob.fire"
	// ItemSpanName names the span of one item's run (one run of
	// consecutive items for a RangeJob), a child of its fire's span.
	ItemSpanName = "shardjob.item"
)

// The attributes of the spans a scheduler makes.
const (
	// AttrJob is the job's name.
	AttrJob = attribute.Key("shardjob.job")
	// AttrFireTime is the fire's time, RFC 3339 with nanoseconds, in UTC.
	// On an item's span it is the fire the item's run stands for, which
	// for a make-up run (misfire, failover) may be earlier than the fire
	// span's.
	AttrFireTime = attribute.Key("shardjob.fire_time")
	// AttrKind is the run's kind: "fire", "misfire", "failover", ...
	// (see Kind).
	AttrKind = attribute.Key("shardjob.kind")
	// AttrServerID is the instance's server id (see WithServerID).
	AttrServerID = attribute.Key("shardjob.server_id")
	// AttrItemCount is, on a fire's span, how many items run here.
	AttrItemCount = attribute.Key("shardjob.item_count")
	// AttrFailedItems is, on a fire's span, how many of them failed or
	// were cut short; set when it is not 0.
	AttrFailedItems = attribute.Key("shardjob.failed_items")
	// AttrItem is, on an item's span, the sharding item (for a RangeJob,
	// the first item of the run).
	AttrItem = attribute.Key("shardjob.item")
	// AttrLastItem is, on the span of a RangeJob's run of several items,
	// the last item of the run.
	AttrLastItem = attribute.Key("shardjob.last_item")
	// AttrThrough is, on an item's span, the latest fire the run stands
	// for (see ShardingContext.Through).
	AttrThrough = attribute.Key("shardjob.through")
	// AttrHalted is, on an item's span, true when the run was cut short
	// (shutdown, lost ownership of the item): it is not completed and
	// runs again elsewhere or later.
	AttrHalted = attribute.Key("shardjob.halted")
	// AttrAttempt is an item span's try of its fire's run: 1 for the
	// first, 2 for the first retry (Config.Retry).
	AttrAttempt = attribute.Key("shardjob.attempt")
	// AttrRetried is set on an item span whose failure another attempt
	// follows: the fire's failed_items does not count it.
	AttrRetried = attribute.Key("shardjob.retried")
)

// tracerName is the instrumentation scope of the scheduler's spans.
const tracerName = "github.com/shardjob/shardjob/job"

// tracer is a scheduler's tracer; options.tracer is nil when tracing is
// off.
type tracer struct {
	t trace.Tracer
}

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
		o.tracer = &tracer{t: tp.Tracer(tracerName)}
		return nil
	}
}

// fireTrace is the span of one fire on this instance.
type fireTrace struct {
	t    trace.Tracer
	span trace.Span
	// failed counts the item runs that failed or were cut short.
	failed atomic.Int32
}

// noTrace is what traceFire returns when tracing is off.
func noTrace() {}

// traceFire starts f's span when tracing is on (f.trace is then set, for
// its items' spans) and returns the call that ends it.
func (r *runner) traceFire(f *fire) func() {
	tr := r.s.opts.tracer
	if tr == nil {
		return noTrace
	}
	_, span := tr.t.Start(f.sess.Ctx(), FireSpanName, trace.WithAttributes(
		AttrJob.String(r.name),
		AttrFireTime.String(traceTime(f.at)),
		AttrKind.String(string(f.kind)),
		AttrServerID.String(r.serverID()),
		AttrItemCount.Int(len(f.items)),
	))
	ft := &fireTrace{t: tr.t, span: span}
	f.trace = ft
	return ft.end
}

// end ends the fire's span, an Error if any item failed.
func (ft *fireTrace) end() {
	if n := ft.failed.Load(); n > 0 {
		ft.span.SetAttributes(AttrFailedItems.Int(int(n)))
		ft.span.SetStatus(codes.Error, fmt.Sprintf("%d items failed", n))
	} else {
		ft.span.SetStatus(codes.Ok, "")
	}
	ft.span.End()
}

// traceItem starts the span of the run of items first to last (the same
// for one item) of f, standing for the fires at to through, as a child of
// f's span, and returns ctx carrying it. Tracing off, it returns ctx and
// a nil span.
func (r *runner) traceItem(ctx context.Context, f *fire, first, last int, at, through time.Time) (context.Context, trace.Span) {
	ft := f.trace
	if ft == nil {
		return ctx, nil
	}
	attrs := []attribute.KeyValue{
		AttrJob.String(r.name),
		AttrItem.Int(first),
		AttrKind.String(string(f.kind)),
		AttrFireTime.String(traceTime(at)),
		AttrThrough.String(traceTime(through)),
		AttrServerID.String(r.serverID()),
	}
	if last != first {
		attrs = append(attrs, AttrLastItem.Int(last))
	}
	return ft.t.Start(trace.ContextWithSpan(ctx, ft.span), ItemSpanName, trace.WithAttributes(attrs...))
}

// endItem ends an item's span (nil: tracing is off) with the run's
// outcome: err is what the job returned, halted non-nil when the run was
// cut short.
func (f *fire) endItem(span trace.Span, err, halted error) {
	if span == nil {
		return
	}
	if err != nil {
		span.RecordError(err)
	}
	switch {
	case halted != nil:
		span.SetAttributes(AttrHalted.Bool(true))
		span.SetStatus(codes.Error, "cut short: "+halted.Error())
	case err != nil:
		span.SetStatus(codes.Error, err.Error())
	default:
		span.SetStatus(codes.Ok, "")
	}
	if err != nil || halted != nil {
		f.trace.failed.Add(1)
	}
	span.End()
}

// traceTime is t as a span attribute's value.
func traceTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
