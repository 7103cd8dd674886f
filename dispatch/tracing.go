package dispatch

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Tracing: with Config.TracerProvider, every dispatch — one attempt of a
// task handed to its start listener — is a span, whose context the start
// listener gets. Without it the start path does nothing more than before:
// no span, no attribute, no allocation (the checks below are a nil
// interface's).

// DispatchSpanName names the span of one dispatch: one attempt of a task
// handed to its worker on this node, from the claim that started it to
// the return of the start listener (Config.OnStart; for a worker reached
// by webhook, the delivery of its start notice).
const DispatchSpanName = "shardjob.dispatch"

// The attributes of a dispatch's span.
const (
	// AttrTask is the task's uuid (Task.UUID).
	AttrTask = attribute.Key("shardjob.task")
	// AttrWorker is the task's worker (Task.Worker).
	AttrWorker = attribute.Key("shardjob.worker")
	// AttrAttempt is the attempt handed over, 1 for the first
	// (Task.Attempt).
	AttrAttempt = attribute.Key("shardjob.attempt")
	// AttrNode is the lease of the node that claimed the attempt
	// (Task.Node): Config.NodeID and its registration's suffix.
	AttrNode = attribute.Key("shardjob.node")
	// AttrLate is true when the attempt started after the task's
	// acceptable start (Task.Late).
	AttrLate = attribute.Key("shardjob.late")
)

// tracerName is the instrumentation scope of the dispatcher's spans.
const tracerName = "github.com/shardjob/shardjob/dispatch"

// newTracer is the dispatcher's tracer for tp; nil (tracing off) when tp is.
func newTracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return nil
	}
	return tp.Tracer(tracerName)
}

// dispatchStart calls the start listener for the claimed attempt t, in the
// dispatch's span when tracing is on: the span begins at claimed (when the
// claim that started t began) and ends when the listener returns, with its
// outcome. ctx is the attempt's context; the listener gets it carrying the
// span.
func (d *Dispatcher) dispatchStart(ctx context.Context, t Task, claimed time.Time) error {
	ctx, span := d.traceDispatch(ctx, t, claimed)
	err := d.callStart(ctx, t)
	endDispatch(span, err)
	return err
}

// traceDispatch starts t's dispatch span when tracing is on and returns
// ctx carrying it. Tracing off, it returns ctx and a nil span. The span is
// a root: each dispatch starts a trace.
func (d *Dispatcher) traceDispatch(ctx context.Context, t Task, claimed time.Time) (context.Context, trace.Span) {
	if d.tracer == nil {
		return ctx, nil
	}
	return d.tracer.Start(ctx, DispatchSpanName, trace.WithNewRoot(), trace.WithTimestamp(claimed), trace.WithAttributes(
		AttrTask.String(t.UUID),
		AttrWorker.String(t.Worker),
		AttrAttempt.Int(t.Attempt),
		AttrNode.String(t.Node),
		AttrLate.Bool(t.Late),
	))
}

// endDispatch ends a dispatch's span (nil: tracing is off) with the start
// listener's outcome: its error recorded and status Error, or status Ok.
func endDispatch(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	} else {
		span.SetStatus(codes.Ok, "")
	}
	span.End()
}

// injectTrace sets h's W3C trace context headers (traceparent, and
// tracestate when not empty) from the span ctx carries; it sets nothing
// when ctx carries none.
func injectTrace(ctx context.Context, h http.Header) {
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
}
