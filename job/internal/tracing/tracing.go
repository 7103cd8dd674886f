package tracing

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// The names of the spans (package job documents them for its users).
const (
	FireSpanName = "shardjob.fire"
	ItemSpanName = "shardjob.item"
)

// The attributes of the spans (package job documents them for its users).
const (
	AttrJob         = attribute.Key("shardjob.job")
	AttrFireTime    = attribute.Key("shardjob.fire_time")
	AttrKind        = attribute.Key("shardjob.kind")
	AttrServerID    = attribute.Key("shardjob.server_id")
	AttrItemCount   = attribute.Key("shardjob.item_count")
	AttrFailedItems = attribute.Key("shardjob.failed_items")
	AttrItem        = attribute.Key("shardjob.item")
	AttrLastItem    = attribute.Key("shardjob.last_item")
	AttrThrough     = attribute.Key("shardjob.through")
	AttrHalted      = attribute.Key("shardjob.halted")
	AttrAttempt     = attribute.Key("shardjob.attempt")
	AttrRetried     = attribute.Key("shardjob.retried")
)

// Scope is the instrumentation scope of the spans.
const Scope = "github.com/shardjob/shardjob/job"

// Tracer is a scheduler's tracer. A nil *Tracer is tracing off.
type Tracer struct {
	t trace.Tracer
}

// New returns the Tracer of tp.
func New(tp trace.TracerProvider) *Tracer { return &Tracer{t: tp.Tracer(Scope)} }

// FireFacts are what a fire's span says of it.
type FireFacts struct {
	Job, Kind, ServerID string
	At                  time.Time
	Items               int // how many items run here
}

// Fire is the span of one fire on this instance; nil when tracing is off.
type Fire struct {
	t    trace.Tracer
	span trace.Span
	// failed counts the item runs that failed or were cut short.
	failed atomic.Int32
}

// StartFire starts a fire's span under ctx; nil when tracing is off (t is
// nil).
func (t *Tracer) StartFire(ctx context.Context, f FireFacts) *Fire {
	if t == nil {
		return nil
	}
	_, span := t.t.Start(ctx, FireSpanName, trace.WithAttributes(
		AttrJob.String(f.Job),
		AttrFireTime.String(Time(f.At)),
		AttrKind.String(f.Kind),
		AttrServerID.String(f.ServerID),
		AttrItemCount.Int(f.Items),
	))
	return &Fire{t: t.t, span: span}
}

// End ends the fire's span, an Error if any item failed. On nil it does
// nothing.
func (ft *Fire) End() {
	if ft == nil {
		return
	}
	if n := ft.failed.Load(); n > 0 {
		ft.span.SetAttributes(AttrFailedItems.Int(int(n)))
		ft.span.SetStatus(codes.Error, fmt.Sprintf("%d items failed", n))
	} else {
		ft.span.SetStatus(codes.Ok, "")
	}
	ft.span.End()
}

// RunFacts are what an item run's span says of it: the run of items First
// to Last (the same for one item), standing for the fires At through
// Through.
type RunFacts struct {
	Job, Kind, ServerID string
	First, Last         int
	At, Through         time.Time
}

// StartItem starts the span of a run of the fire's items as a child of
// the fire's span, and returns ctx carrying it. On nil (tracing off) it
// returns ctx and a nil span.
func (ft *Fire) StartItem(ctx context.Context, r RunFacts) (context.Context, trace.Span) {
	if ft == nil {
		return ctx, nil
	}
	attrs := []attribute.KeyValue{
		AttrJob.String(r.Job),
		AttrItem.Int(r.First),
		AttrKind.String(r.Kind),
		AttrFireTime.String(Time(r.At)),
		AttrThrough.String(Time(r.Through)),
		AttrServerID.String(r.ServerID),
	}
	if r.Last != r.First {
		attrs = append(attrs, AttrLastItem.Int(r.Last))
	}
	return ft.t.Start(trace.ContextWithSpan(ctx, ft.span), ItemSpanName, trace.WithAttributes(attrs...))
}

// EndItem ends an item's span (nil: tracing is off) with the run's
// outcome: err is what the job returned, halted non-nil when the run was
// cut short.
func (ft *Fire) EndItem(span trace.Span, err, halted error) {
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
		ft.failed.Add(1)
	}
	span.End()
}

// EndAttempt ends an attempt's span (nil: tracing is off), with its
// attempt number; an attempt that another follows (retrying) is not
// counted among the fire's failed items.
func (ft *Fire) EndAttempt(span trace.Span, attempt int, err, halted error, retrying bool) {
	if span == nil {
		return
	}
	span.SetAttributes(AttrAttempt.Int(attempt))
	if !retrying {
		ft.EndItem(span, err, halted)
		return
	}
	span.RecordError(err)
	span.SetAttributes(AttrRetried.Bool(true))
	span.SetStatus(codes.Error, err.Error())
	span.End()
}

// Time is t as a span attribute's value: RFC 3339 with nanoseconds, in
// UTC.
func Time(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
