package dispatch

import (
	"context"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Tracing: with Config.TracerProvider, every dispatch — one attempt of a
// task handed to its start listener — is a span, whose context the start
// listener gets, and so is every timeout and fail notice. Assign stores the
// caller's span context on the tasks it adds, and those spans link to it.
// Without a provider the start path, the notices and Assign do nothing more
// than before: no span, no attribute, no allocation, nothing formatted or
// parsed (the checks below are a nil interface's).

// DispatchSpanName names the span of one dispatch: one attempt of a task
// handed to its worker on this node, from the claim that started it to
// the return of the start listener (Config.OnStart; for a worker reached
// by webhook, the delivery of its start notice).
const DispatchSpanName = "shardjob.dispatch"

// TimeoutSpanName names the span of one timeout notice: the call of
// Config.OnTimeout for an attempt that timed out (for a worker reached by
// webhook, the delivery of its timeout notice).
const TimeoutSpanName = "shardjob.dispatch.timeout"

// FailSpanName names the span of one fail notice: the call of
// Config.OnFail for a task that failed for good (for a worker reached by
// webhook, the delivery of its fail notice).
const FailSpanName = "shardjob.dispatch.fail"

// The attributes of a dispatch's span, and of a notice's.
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

	// AttrLink, on a link of a dispatch's or a notice's span, says what
	// the linked span is: LinkAssign.
	AttrLink = attribute.Key("shardjob.link")
)

// LinkAssign is AttrLink's value on the link to the span of the Assign
// call that created the task. The link is not a parent: each dispatch and
// each notice starts a trace of its own, which points back to the one
// that assigned the task, as messaging systems link a message's
// processing to its sending.
const LinkAssign = "assign"

// assignTrace is the W3C trace context of the span ctx carries, as Assign
// stores it on the tasks it adds (the column trace_context): the
// traceparent, and when the span has a trace state, a newline and the
// tracestate. It is "" — stored as NULL — when tracing is off, without
// formatting anything, or when ctx carries no valid span.
func (d *Dispatcher) assignTrace(ctx context.Context) string {
	if d.tracer == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	tp, ts := c[traceparentKey], c[tracestateKey]
	if ts == "" {
		return tp
	}
	return tp + "\n" + ts
}

// remoteTrace is the context an assignment made over REST is recorded
// under: the request's, which carries the span of an instrumented server;
// or, when it has none, the caller's span from the request's traceparent
// and tracestate headers, so that a client in any language links the
// dispatches to its own trace. Tracing off, it reads nothing.
func (d *Dispatcher) remoteTrace(r *http.Request) context.Context {
	ctx := r.Context()
	if d.tracer == nil || trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(r.Header))
}

// The W3C trace context's keys, as propagation.TraceContext names them.
const (
	traceparentKey = "traceparent"
	tracestateKey  = "tracestate"
)

// storedTrace is a task's stored trace context as a propagation carrier.
type storedTrace struct{ parent, state string }

func (c storedTrace) Get(key string) string {
	switch key {
	case traceparentKey:
		return c.parent
	case tracestateKey:
		return c.state
	}
	return ""
}

func (storedTrace) Set(string, string) {}

func (storedTrace) Keys() []string { return []string{traceparentKey, tracestateKey} }

// assignLink is the link to the span stored on a task by Assign. A value
// that is not a W3C trace context (a row edited by hand) gives no link
// (ok false), and no error: the dispatch goes on without it. A tracestate
// that cannot be read is dropped, the traceparent kept, as the W3C
// specification asks.
func assignLink(stored string) (link trace.Link, ok bool) {
	if stored == "" {
		return trace.Link{}, false
	}
	parent, state, _ := strings.Cut(stored, "\n")
	sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), storedTrace{parent, state}))
	if !sc.IsValid() {
		return trace.Link{}, false
	}
	return trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{AttrLink.String(LinkAssign)}}, true
}

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
// a root: each dispatch starts a trace, linked to the Assign call's.
func (d *Dispatcher) traceDispatch(ctx context.Context, t Task, claimed time.Time) (context.Context, trace.Span) {
	if d.tracer == nil {
		return ctx, nil
	}
	return d.startTaskSpan(ctx, DispatchSpanName, t, t.Node, trace.WithTimestamp(claimed))
}

// startTaskSpan starts a root span named name for task t, with the
// attributes of a dispatch's span (node: the lease that holds or held the
// attempt, left out when "") and a link to the Assign call's span when t
// has one stored. Tracing must be on.
func (d *Dispatcher) startTaskSpan(ctx context.Context, name string, t Task, node string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	attrs := make([]attribute.KeyValue, 0, 5)
	attrs = append(attrs, AttrTask.String(t.UUID), AttrWorker.String(t.Worker), AttrAttempt.Int(t.Attempt))
	if node != "" {
		attrs = append(attrs, AttrNode.String(node))
	}
	attrs = append(attrs, AttrLate.Bool(t.Late))
	opts = append(opts, trace.WithNewRoot(), trace.WithAttributes(attrs...))
	if link, ok := assignLink(t.traceCtx); ok {
		opts = append(opts, trace.WithLinks(link))
	}
	return d.tracer.Start(ctx, name, opts...)
}

// notice runs a timeout or fail listener f for t under an operation
// context, in a span named name (TimeoutSpanName, FailSpanName) when
// tracing is on; node is the lease that held the attempt ("" when none
// did: a task failed late without a start). The listener's context carries
// the span, so a Webhooks notice sends it as its traceparent. The span has
// no status: a listener returns no outcome.
func (d *Dispatcher) notice(name string, f TaskFunc, t Task, node string) {
	ctx, cancel := d.opCtx()
	defer cancel()
	if d.tracer != nil {
		var span trace.Span
		ctx, span = d.startTaskSpan(ctx, name, t, node)
		defer span.End()
	}
	f(ctx, t)
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
