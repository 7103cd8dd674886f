package dispatch

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/shardjob/shardjob/internal/testing/testlog"
)

// recorder is an SDK tracer provider whose spans a test reads.
func recorder(t *testing.T) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := tp.Shutdown(ctx); err != nil {
			t.Errorf("tracer provider shutdown: %v", err)
		}
	})
	return tp, rec
}

// endedSpans waits until rec holds n ended spans named name and returns
// them; more than n fails the test.
func endedSpans(t *testing.T, rec *tracetest.SpanRecorder, name string, n int) []sdktrace.ReadOnlySpan {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var out []sdktrace.ReadOnlySpan
		for _, s := range rec.Ended() {
			if s.Name() == name {
				out = append(out, s)
			}
		}
		if len(out) > n {
			t.Fatalf("%d %s spans, want %d", len(out), name, n)
		}
		if len(out) == n {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d %s spans after 30s, want %d", len(out), name, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// attrs is a span's attributes by key.
func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// seenStart is what a start listener saw: the task and its context's span.
type seenStart struct {
	task  Task
	span  trace.SpanContext
	child trace.SpanContext // the span the listener started under it
}

// Every attempt is a span of its own, a root, with the task, worker,
// attempt, node and lateness as attributes; the start listener's context
// carries it, so the listener's own spans are its children; a failed
// start's span has status Error and the error recorded, the others Ok.
func TestDispatchSpanPerAttempt(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		ctx := testCtx(t)
		clk := newFakeClock()
		tp, rec := recorder(t)
		starts := make(chan seenStart, 10)
		cfg.Clock = clk
		cfg.FinishOnReturn = true
		cfg.TracerProvider = tp
		cfg.OnStart = func(ctx context.Context, tk Task) error {
			_, child := tp.Tracer("app").Start(ctx, "app.work")
			child.End()
			starts <- seenStart{task: tk, span: trace.SpanContextFromContext(ctx), child: child.SpanContext()}
			if tk.ExternalID == "flaky" && tk.Attempt == 1 {
				return errors.New("flaky start")
			}
			return nil
		}
		d := open(t, cfg)
		mustWorker(t, d, "w", 5)
		mustWorker(t, d, "w2", 5)
		now := clk.Now()
		ts, err := d.Assign(ctx, Assignment{Worker: "w", Start: now, End: now.Add(time.Hour), Tasks: newTasks("flaky", "ontime"), MaxRetries: 1})
		if err != nil {
			t.Fatal(err)
		}
		late, err := d.Assign(ctx, Assignment{Worker: "w2", Start: now, End: now.Add(time.Minute), Tasks: newTasks("late")})
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(2 * time.Minute) // past the late task's acceptable start only
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		var seen []seenStart
		for range 3 {
			seen = append(seen, recv(t, starts, "start"))
		}
		w := waitStatus(t, d, ts[0].UUID, StatusWaiting)
		clk.Advance(w.RunAt.Sub(clk.Now()))
		d.kick()
		seen = append(seen, recv(t, starts, "retry"))
		for _, tk := range append(ts, late...) {
			waitStatus(t, d, tk.UUID, StatusFinished)
		}
		none(t, starts, "another start")

		spans := endedSpans(t, rec, DispatchSpanName, 4)
		type key struct {
			uuid    string
			attempt int
		}
		byAttempt := map[key]sdktrace.ReadOnlySpan{}
		for _, s := range spans {
			a := attrs(s)
			byAttempt[key{a[AttrTask].AsString(), int(a[AttrAttempt].AsInt64())}] = s
		}
		children := map[trace.SpanID]sdktrace.ReadOnlySpan{}
		for _, s := range endedSpans(t, rec, "app.work", 4) {
			children[s.SpanContext().SpanID()] = s
		}
		traces := map[trace.TraceID]bool{}
		for _, st := range seen {
			tk := st.task
			s, ok := byAttempt[key{tk.UUID, tk.Attempt}]
			if !ok {
				t.Errorf("no span for %s attempt %d", tk.ExternalID, tk.Attempt)
				continue
			}
			a := attrs(s)
			if a[AttrWorker].AsString() != tk.Worker || a[AttrNode].AsString() != tk.Node || tk.Node == "" {
				t.Errorf("%s attempt %d: worker %q node %q, want %q %q", tk.ExternalID, tk.Attempt, a[AttrWorker].AsString(), a[AttrNode].AsString(), tk.Worker, tk.Node)
			}
			if wantLate := tk.ExternalID == "late"; a[AttrLate].AsBool() != wantLate || tk.Late != wantLate {
				t.Errorf("%s: span late=%v, task late=%v, want %v", tk.ExternalID, a[AttrLate].AsBool(), tk.Late, wantLate)
			}
			if s.Parent().IsValid() {
				t.Errorf("%s attempt %d: span has parent %v, want a root", tk.ExternalID, tk.Attempt, s.Parent())
			}
			traces[s.SpanContext().TraceID()] = true
			if !st.span.Equal(s.SpanContext()) {
				t.Errorf("%s attempt %d: the listener's context carries %v, want the span %v", tk.ExternalID, tk.Attempt, st.span, s.SpanContext())
			}
			if c, ok := children[st.child.SpanID()]; !ok || c.Parent().SpanID() != s.SpanContext().SpanID() || c.Parent().TraceID() != s.SpanContext().TraceID() {
				t.Errorf("%s attempt %d: the listener's span is not a child of the dispatch span", tk.ExternalID, tk.Attempt)
			}
			failed := tk.ExternalID == "flaky" && tk.Attempt == 1
			switch {
			case failed && (s.Status().Code != codes.Error || s.Status().Description != "flaky start"):
				t.Errorf("failed start: status %+v, want Error \"flaky start\"", s.Status())
			case failed && !hasException(s, "flaky start"):
				t.Errorf("failed start: events %+v, want the error recorded", s.Events())
			case !failed && s.Status().Code != codes.Ok:
				t.Errorf("%s attempt %d: status %+v, want Ok", tk.ExternalID, tk.Attempt, s.Status())
			}
			if s.StartTime().After(s.EndTime()) {
				t.Errorf("%s attempt %d: span starts after it ends", tk.ExternalID, tk.Attempt)
			}
		}
		if len(traces) != 4 {
			t.Errorf("%d traces for 4 dispatches, want one each", len(traces))
		}
		if _, ok := byAttempt[key{ts[0].UUID, 2}]; !ok {
			t.Errorf("no span for the retry of the flaky task")
		}
	})
}

// hasException reports whether s recorded an error with message msg.
func hasException(s sdktrace.ReadOnlySpan, msg string) bool {
	for _, ev := range s.Events() {
		if ev.Name != "exception" {
			continue
		}
		for _, kv := range ev.Attributes {
			if kv.Key == "exception.message" && kv.Value.AsString() == msg {
				return true
			}
		}
	}
	return false
}

// A panicking start listener's span has status Error, naming the panic.
func TestDispatchSpanOfAPanickingStart(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		ctx := testCtx(t)
		tp, rec := recorder(t)
		cfg.TracerProvider = tp
		cfg.OnStart = func(context.Context, Task) error { panic("listener broke") }
		d := open(t, cfg)
		mustWorker(t, d, "w", 1)
		ts, err := d.Assign(ctx, Assignment{Worker: "w", Start: time.Now(), End: time.Now().Add(time.Hour), Tasks: newTasks("p")})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, d, ts[0].UUID, StatusFailed)
		s := endedSpans(t, rec, DispatchSpanName, 1)[0]
		if s.Status().Code != codes.Error || !strings.Contains(s.Status().Description, "listener broke") {
			t.Errorf("status %+v, want Error naming the panic", s.Status())
		}
	})
}

// traceHook is a webhook receiver that records the trace context headers
// of every notice; it refuses the first one (503), so the notice is sent
// twice.
func traceHook(t *testing.T) (*httptest.Server, <-chan [2]string) {
	got := make(chan [2]string, 10)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- [2]string{r.Header.Get("traceparent"), r.Header.Get("tracestate")}
		if n.Add(1) == 1 {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// A worker reached by webhook gets the dispatch's span as the W3C
// traceparent header, on every try of the start notice.
func TestWebhookStartCarriesTheDispatchSpan(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		ctx := testCtx(t)
		tp, rec := recorder(t)
		hook, got := traceHook(t)
		wh := &Webhooks{Delay: time.Millisecond, Logger: testlog.Logger(t)}
		cfg.OnStart = wh.Start
		cfg.TracerProvider = tp
		cfg.AllowInsecureWebhooks, cfg.AllowPrivateWebhooks = true, true
		d := open(t, cfg)
		wh.Workers = d
		if err := d.PutWorker(ctx, Worker{Name: "hooked", MaxRunning: 1, WebhookURL: hook.URL, WebhookSecret: hookSecret}); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Assign(ctx, Assignment{Worker: "hooked", Start: time.Now(), End: time.Now().Add(time.Hour), Tasks: newTasks("h")}); err != nil {
			t.Fatal(err)
		}
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		first, second := recv(t, got, "first try"), recv(t, got, "second try")
		s := endedSpans(t, rec, DispatchSpanName, 1)[0]
		if s.Status().Code != codes.Ok {
			t.Errorf("status %+v, want Ok (the second try was accepted)", s.Status())
		}
		for i, h := range [][2]string{first, second} {
			sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.HeaderCarrier{"Traceparent": {h[0]}}))
			if !sc.IsValid() || sc.TraceID() != s.SpanContext().TraceID() || sc.SpanID() != s.SpanContext().SpanID() {
				t.Errorf("try %d: traceparent %q, want trace %s span %s", i+1, h[0], s.SpanContext().TraceID(), s.SpanContext().SpanID())
			}
			if h[1] != "" {
				t.Errorf("try %d: tracestate %q for a span without trace state", i+1, h[1])
			}
		}
	})
}

// With no tracer provider nothing is traced, not even through the global
// provider; the start listener's context carries no span, even when Open's
// context did, and a start notice carries no trace context.
func TestTracingOffRecordsNothing(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		tp, rec := recorder(t)
		prev := otel.GetTracerProvider()
		otel.SetTracerProvider(tp)
		t.Cleanup(func() { otel.SetTracerProvider(prev) })

		hook, got := traceHook(t)
		wh := &Webhooks{Delay: time.Millisecond, Logger: testlog.Logger(t)}
		spans := make(chan bool, 10)
		cfg.OnStart = func(ctx context.Context, tk Task) error {
			spans <- trace.SpanFromContext(ctx).SpanContext().IsValid()
			return wh.Start(ctx, tk)
		}
		cfg.AllowInsecureWebhooks, cfg.AllowPrivateWebhooks = true, true
		// Open's caller has a span of its own open.
		callerCtx, callerSpan := tp.Tracer("app").Start(testCtx(t), "app.setup")
		d, err := Open(callerCtx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		callerSpan.End()
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := d.Close(ctx); err != nil {
				t.Errorf("close: %v", err)
			}
		})
		wh.Workers = d
		ctx := testCtx(t)
		if err := d.PutWorker(ctx, Worker{Name: "hooked", MaxRunning: 1, WebhookURL: hook.URL, WebhookSecret: hookSecret}); err != nil {
			t.Fatal(err)
		}
		ts, err := d.Assign(ctx, Assignment{Worker: "hooked", Start: time.Now(), End: time.Now().Add(time.Hour), Tasks: newTasks("h")})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if recv(t, spans, "start") {
			t.Errorf("the start listener's context carries a span with tracing off")
		}
		for i := range 2 {
			if h := recv(t, got, "notice"); h != [2]string{} {
				t.Errorf("try %d carried traceparent %q, tracestate %q with tracing off", i+1, h[0], h[1])
			}
		}
		if err := d.Finish(ctx, ts[0].UUID); err != nil {
			t.Fatal(err)
		}
		for _, s := range rec.Ended() {
			if s.Name() != "app.setup" {
				t.Errorf("span %q recorded with tracing off", s.Name())
			}
		}
	})
}

// With tracing off the start call allocates nothing for tracing, a
// notice's request gets no header, and Assign formats no trace context
// from its caller's span; the same measure sees tracing's cost when it is
// on.
func TestTracingOffAllocatesNothing(t *testing.T) {
	d := &Dispatcher{cfg: Config{OnStart: func(context.Context, Task) error { return nil }}}
	ctx := context.Background()
	tk := Task{UUID: "u", Worker: "w", Attempt: 1, Node: "n/1"}
	start := func() {
		if err := d.dispatchStart(ctx, tk, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := testing.AllocsPerRun(100, start); n != 0 {
		t.Errorf("tracing off: the start call allocates %v times, want 0", n)
	}
	h := http.Header{}
	if n := testing.AllocsPerRun(100, func() { injectTrace(ctx, h) }); n != 0 {
		t.Errorf("tracing off: injecting the trace context allocates %v times, want 0", n)
	}
	if len(h) != 0 {
		t.Errorf("tracing off: headers %v set", h)
	}
	// Assign's caller has a span: with tracing off it is not formatted.
	tp, _ := recorder(t)
	spanCtx, span := tp.Tracer("app").Start(ctx, "app.assign")
	defer span.End()
	var stored string
	assign := func() { stored = d.assignTrace(spanCtx) }
	if n := testing.AllocsPerRun(100, assign); n != 0 || stored != "" {
		t.Errorf("tracing off: reading Assign's span allocates %v times and gives %q, want 0 and \"\"", n, stored)
	}

	d.tracer = newTracer(tp)
	if n := testing.AllocsPerRun(100, start); n == 0 {
		t.Errorf("tracing on: the start call allocates nothing, so the measure above sees nothing")
	}
	if n := testing.AllocsPerRun(100, assign); n == 0 || stored == "" {
		t.Errorf("tracing on: reading Assign's span allocates %v times and gives %q, so the measure above sees nothing", n, stored)
	}
}
