package dispatch

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/shardjob/shardjob/internal/testing/testlog"
)

// traceColumn reads a task's stored trace context; ok is false for NULL.
func traceColumn(t *testing.T, d *Dispatcher, uuid string) (string, bool) {
	t.Helper()
	var v sql.NullString
	if err := d.DB().QueryRowContext(testCtx(t), d.st.q(`SELECT trace_context FROM dispatch_tasks WHERE uuid = ?`), uuid).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v.String, v.Valid
}

// callerSpan starts a span as an application calling Assign would, under a
// remote parent that carries a trace state, so that the span has one.
func callerSpan(t *testing.T, tp trace.TracerProvider) (context.Context, trace.Span) {
	t.Helper()
	ts, err := trace.ParseTraceState("vendor=opaque-1")
	if err != nil {
		t.Fatal(err)
	}
	remote := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
		TraceState: ts,
		Remote:     true,
	})
	return tp.Tracer("app").Start(trace.ContextWithRemoteSpanContext(testCtx(t), remote), "app.assign")
}

// checkAssignLink fails unless s has exactly one link, to the span want,
// with its trace state and AttrLink = LinkAssign; and s is not in want's
// trace (a link, not a parent).
func checkAssignLink(t *testing.T, what string, s sdktrace.ReadOnlySpan, want trace.SpanContext) {
	t.Helper()
	links := s.Links()
	if len(links) != 1 {
		t.Errorf("%s: %d links, want 1 (to the Assign span)", what, len(links))
		return
	}
	l := links[0]
	if l.SpanContext.TraceID() != want.TraceID() || l.SpanContext.SpanID() != want.SpanID() {
		t.Errorf("%s: link to trace %s span %s, want the Assign span's trace %s span %s", what, l.SpanContext.TraceID(), l.SpanContext.SpanID(), want.TraceID(), want.SpanID())
	}
	if got, wantTS := l.SpanContext.TraceState().String(), want.TraceState().String(); got != wantTS {
		t.Errorf("%s: link's trace state %q, want %q", what, got, wantTS)
	}
	if !l.SpanContext.IsSampled() {
		t.Errorf("%s: the link lost the Assign span's sampled flag", what)
	}
	var kind string
	for _, kv := range l.Attributes {
		if kv.Key == AttrLink {
			kind = kv.Value.AsString()
		}
	}
	if kind != LinkAssign {
		t.Errorf("%s: link attribute %s = %q, want %q", what, AttrLink, kind, LinkAssign)
	}
	if s.Parent().IsValid() || s.SpanContext().TraceID() == want.TraceID() {
		t.Errorf("%s: span is in the Assign span's trace (parent %v), want a root of its own linked to it", what, s.Parent())
	}
}

// Assign stores the caller's span on the tasks it adds, and each
// dispatch's span links to it — every attempt's, the retry's too; a task
// assigned without a span has NULL stored and its dispatch no link.
func TestDispatchLinksToTheAssignSpan(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		ctx := testCtx(t)
		clk := newFakeClock()
		tp, rec := recorder(t)
		cfg.Clock = clk
		cfg.TracerProvider = tp
		cfg.FinishOnReturn = true
		failed := make(chan Task, 1)
		cfg.OnStart = func(_ context.Context, tk Task) error {
			if tk.ExternalID == "a" && tk.Attempt == 1 {
				failed <- tk
				return errors.New("try again")
			}
			return nil
		}
		d := open(t, cfg)
		mustWorker(t, d, "w", 5)
		now := clk.Now()
		actx, aspan := callerSpan(t, tp)
		linked, err := d.Assign(actx, Assignment{Worker: "w", Start: now, End: now.Add(time.Hour), Tasks: newTasks("a", "b"), MaxRetries: 1})
		aspan.End()
		if err != nil {
			t.Fatal(err)
		}
		plain, err := d.Assign(ctx, Assignment{Worker: "w", Start: now, End: now.Add(time.Hour), Tasks: newTasks("plain")})
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range linked {
			v, ok := traceColumn(t, d, tk.UUID)
			if !ok || v == "" {
				t.Errorf("%s: trace_context %q (null %v), want the Assign span's", tk.ExternalID, v, !ok)
			}
		}
		if v, ok := traceColumn(t, d, plain[0].UUID); ok {
			t.Errorf("plain: trace_context %q, want NULL (no span when assigned)", v)
		}
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		recv(t, failed, "a's first start")
		w := waitStatus(t, d, linked[0].UUID, StatusWaiting) // claimed already: waiting for its retry
		clk.Advance(w.RunAt.Sub(clk.Now()))
		d.kick()
		for _, tk := range append(linked, plain...) {
			waitStatus(t, d, tk.UUID, StatusFinished)
		}
		seen := 0
		for _, s := range endedSpans(t, rec, DispatchSpanName, 4) {
			a := attrs(s)
			what := a[AttrTask].AsString() + " attempt " + a[AttrAttempt].Emit()
			switch a[AttrTask].AsString() {
			case linked[0].UUID, linked[1].UUID:
				seen++
				checkAssignLink(t, what, s, aspan.SpanContext())
			case plain[0].UUID:
				if len(s.Links()) != 0 {
					t.Errorf("plain: links %v, want none", s.Links())
				}
			default:
				t.Errorf("a span for an unknown task: %s", what)
			}
		}
		if seen != 3 {
			t.Errorf("%d dispatch spans of the tasks assigned under a span, want 3 (a twice, b once)", seen)
		}
	})
}

// A stored trace context that is not one (an operator edited the row) is
// ignored: the task still dispatches, with no link and no error. A
// readable traceparent with an unreadable tracestate keeps the link and
// drops the state, as the W3C specification asks.
func TestGarbageTraceContextIsIgnored(t *testing.T) {
	garbage := map[string]string{
		"words":      "not a trace context",
		"empty":      "",
		"newline":    "\n",
		"zero-trace": "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
		"zero-span":  "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
		"version-ff": "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"truncated":  "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba9",
		"trailing":   "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
		"control":    "\x01\x02\x7f-\x1b",
		"long":       strings.Repeat("0", 64<<10),
	}
	const badState = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\n=,=,not a tracestate"
	eachStore(t, func(t *testing.T, cfg Config) {
		ctx := testCtx(t)
		tp, rec := recorder(t)
		cfg.TracerProvider = tp
		cfg.FinishOnReturn = true
		cfg.OnStart = func(context.Context, Task) error { return nil }
		d := open(t, cfg)
		mustWorker(t, d, "w", 20)
		var ids []string
		for name := range garbage {
			ids = append(ids, name)
		}
		ids = append(ids, "bad-state")
		actx, aspan := callerSpan(t, tp)
		ts, err := d.Assign(actx, Assignment{Worker: "w", Start: time.Now(), End: time.Now().Add(time.Hour), Tasks: newTasks(ids...)})
		aspan.End()
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range ts {
			v := badState
			if tk.ExternalID != "bad-state" {
				v = garbage[tk.ExternalID]
			}
			if _, err := d.DB().ExecContext(ctx, d.st.q(`UPDATE dispatch_tasks SET trace_context = ? WHERE uuid = ?`), v, tk.UUID); err != nil {
				t.Fatalf("%s: %v", tk.ExternalID, err)
			}
		}
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		byUUID := map[string]string{}
		for _, tk := range ts {
			waitStatus(t, d, tk.UUID, StatusFinished)
			byUUID[tk.UUID] = tk.ExternalID
		}
		for _, s := range endedSpans(t, rec, DispatchSpanName, len(ts)) {
			id := byUUID[attrs(s)[AttrTask].AsString()]
			if id == "bad-state" {
				if len(s.Links()) != 1 {
					t.Errorf("bad-state: %d links, want 1 (the traceparent is readable)", len(s.Links()))
					continue
				}
				l := s.Links()[0].SpanContext
				if l.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || l.SpanID().String() != "00f067aa0ba902b7" || l.TraceState().Len() != 0 {
					t.Errorf("bad-state: link %v with trace state %q, want the stored traceparent and no state", l, l.TraceState())
				}
				continue
			}
			if len(s.Links()) != 0 {
				t.Errorf("%s: links %v, want none", id, s.Links())
			}
			if s.Status().Code.String() != "Ok" {
				t.Errorf("%s: status %+v, want Ok", id, s.Status())
			}
		}
	})
}

// noticeHook is a webhook receiver that records each notice's event and
// trace context headers, and accepts it.
func noticeHook(t *testing.T) (*httptest.Server, <-chan [3]string) {
	got := make(chan [3]string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var ev WebhookEvent
		if err == nil {
			err = json.Unmarshal(body, &ev)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		got <- [3]string{ev.Event, r.Header.Get("traceparent"), r.Header.Get("tracestate")}
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// A timeout notice and a fail notice are spans of their own, roots linked
// to the Assign span, with the dispatch span's attributes (the node: the
// lease that held the attempt); the listeners' contexts carry them, and
// the webhook notices send them as traceparent and tracestate. A task that
// fails late, never started, has a fail span without a node.
func TestNoticesAreTraced(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		ctx := testCtx(t)
		clk := newFakeClock()
		tp, rec := recorder(t)
		hook, got := noticeHook(t)
		wh := &Webhooks{Delay: time.Millisecond, Logger: testlog.Logger(t)}
		type seen struct {
			task Task
			span trace.SpanContext
		}
		starts := make(chan Task, 10)
		timeouts, fails := make(chan seen, 10), make(chan seen, 10)
		cfg.Clock = clk
		cfg.TracerProvider = tp
		cfg.AllowInsecureWebhooks, cfg.AllowPrivateWebhooks = true, true
		cfg.OnStart = func(_ context.Context, tk Task) error { starts <- tk; return nil } // never finishes
		cfg.OnTimeout = func(ctx context.Context, tk Task) {
			wh.Timeout(ctx, tk)
			timeouts <- seen{tk, trace.SpanContextFromContext(ctx)}
		}
		cfg.OnFail = func(ctx context.Context, tk Task) {
			wh.Fail(ctx, tk)
			fails <- seen{tk, trace.SpanContextFromContext(ctx)}
		}
		d := open(t, cfg)
		wh.Workers = d
		for _, w := range []Worker{
			{Name: "hooked", MaxRunning: 1, WebhookURL: hook.URL, WebhookSecret: hookSecret},
			{Name: "strict", MaxRunning: 1, LatePolicy: LateFail, WebhookURL: hook.URL, WebhookSecret: hookSecret},
		} {
			if err := d.PutWorker(ctx, w); err != nil {
				t.Fatal(err)
			}
		}
		now := clk.Now()
		actx, aspan := callerSpan(t, tp)
		ts, err := d.Assign(actx, Assignment{Worker: "hooked", Start: now, End: now.Add(time.Hour), Tasks: newTasks("t"), Timeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		late, err := d.Assign(actx, Assignment{Worker: "strict", Start: now.Add(-2 * time.Minute), End: now.Add(-time.Minute), Tasks: newTasks("late")})
		aspan.End()
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		started := recv(t, starts, "start")
		lateFail := recv(t, fails, "late fail notice")
		clk.Advance(30 * time.Second)
		d.sweep(ctx)
		to := recv(t, timeouts, "timeout notice")
		fail := recv(t, fails, "fail notice")
		waitStatus(t, d, ts[0].UUID, StatusFailed)
		waitStatus(t, d, late[0].UUID, StatusFailed)

		toSpan := endedSpans(t, rec, TimeoutSpanName, 1)[0]
		failSpans := endedSpans(t, rec, FailSpanName, 2)
		dispatchSpan := endedSpans(t, rec, DispatchSpanName, 1)[0]
		failSpan, lateSpan := failSpans[0], failSpans[1]
		if attrs(failSpan)[AttrTask].AsString() != ts[0].UUID {
			failSpan, lateSpan = lateSpan, failSpan
		}
		check := func(what string, s sdktrace.ReadOnlySpan, tk Task, node string, listener trace.SpanContext) {
			t.Helper()
			a := attrs(s)
			if a[AttrTask].AsString() != tk.UUID || a[AttrWorker].AsString() != tk.Worker || a[AttrAttempt].AsInt64() != int64(tk.Attempt) || a[AttrLate].AsBool() != tk.Late {
				t.Errorf("%s: attributes %v, want task %s worker %s attempt %d late %v", what, s.Attributes(), tk.UUID, tk.Worker, tk.Attempt, tk.Late)
			}
			if v, ok := a[AttrNode]; node != "" && v.AsString() != node || node == "" && ok {
				t.Errorf("%s: node %q (set %v), want %q", what, v.AsString(), ok, node)
			}
			checkAssignLink(t, what, s, aspan.SpanContext())
			if !listener.Equal(s.SpanContext()) {
				t.Errorf("%s: the listener's context carries %v, want the span %v", what, listener, s.SpanContext())
			}
		}
		check("timeout", toSpan, to.task, started.Node, to.span)
		check("fail", failSpan, fail.task, started.Node, fail.span)
		check("late fail", lateSpan, lateFail.task, "", lateFail.span)
		if a := attrs(toSpan); a[AttrAttempt].AsInt64() != 1 || a[AttrNode].AsString() != attrs(dispatchSpan)[AttrNode].AsString() {
			t.Errorf("timeout span: attempt %d node %q, want the dispatch's: 1, %q", a[AttrAttempt].AsInt64(), a[AttrNode].AsString(), attrs(dispatchSpan)[AttrNode].AsString())
		}
		if a := attrs(lateSpan); a[AttrAttempt].AsInt64() != 0 || !a[AttrLate].AsBool() {
			t.Errorf("late fail span: attempt %d late %v, want 0 and true", a[AttrAttempt].AsInt64(), a[AttrLate].AsBool())
		}

		byEvent := map[string][]sdktrace.ReadOnlySpan{"timeout": {toSpan}, "fail": {failSpan, lateSpan}}
		for range 3 {
			h := recv(t, got, "notice")
			sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.HeaderCarrier{"Traceparent": {h[1]}, "Tracestate": {h[2]}}))
			spans := byEvent[h[0]]
			i := -1
			for j, s := range spans {
				if sc.IsValid() && sc.TraceID() == s.SpanContext().TraceID() && sc.SpanID() == s.SpanContext().SpanID() {
					i = j
				}
			}
			if i < 0 {
				t.Errorf("%s notice: traceparent %q matches none of its spans", h[0], h[1])
				continue
			}
			byEvent[h[0]] = append(spans[:i], spans[i+1:]...)
			if want := spans[i].SpanContext().TraceState().String(); h[2] != want {
				t.Errorf("%s notice: tracestate %q, want %q", h[0], h[2], want)
			}
		}
		none(t, got, "another notice")
	})
}

// With tracing off, Assign stores no trace context even when its caller
// has a span, and the timeout and fail listeners' contexts carry no span;
// nothing is recorded through the global provider either.
func TestTracingOffStoresNoTraceContext(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		tp, rec := recorder(t)
		prev := otel.GetTracerProvider()
		otel.SetTracerProvider(tp)
		t.Cleanup(func() { otel.SetTracerProvider(prev) })
		ctx := testCtx(t)
		clk := newFakeClock()
		spans := make(chan bool, 10)
		cfg.Clock = clk
		cfg.OnStart = func(context.Context, Task) error { return nil } // never finishes
		cfg.OnTimeout = func(ctx context.Context, _ Task) { spans <- trace.SpanContextFromContext(ctx).IsValid() }
		cfg.OnFail = func(ctx context.Context, _ Task) { spans <- trace.SpanContextFromContext(ctx).IsValid() }
		d := open(t, cfg)
		mustWorker(t, d, "w", 1)
		actx, aspan := callerSpan(t, tp)
		ts, err := d.Assign(actx, Assignment{Worker: "w", Start: clk.Now(), End: clk.Now().Add(time.Hour), Tasks: newTasks("t"), Timeout: 30 * time.Second})
		aspan.End()
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := traceColumn(t, d, ts[0].UUID); ok {
			t.Errorf("trace_context %q with tracing off, want NULL", v)
		}
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, d, ts[0].UUID, StatusRunning)
		clk.Advance(30 * time.Second)
		d.sweep(ctx)
		for _, what := range []string{"timeout", "fail"} {
			if recv(t, spans, what+" listener") {
				t.Errorf("the %s listener's context carries a span with tracing off", what)
			}
		}
		for _, s := range rec.Ended() {
			if s.Name() != "app.assign" {
				t.Errorf("span %q recorded with tracing off", s.Name())
			}
		}
	})
}

// A store made before migration 005 gets the trace_context column when a
// dispatcher opens it: its tasks keep NULL and dispatch without a link,
// and tasks assigned from then on store their caller's span.
func TestTraceContextMigrationOnAnOlderStore(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		ctx := testCtx(t)
		tp, rec := recorder(t)
		old, err := Open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := old.PutWorker(ctx, Worker{Name: "w", MaxRunning: 5}); err != nil {
			t.Fatal(err)
		}
		before, err := old.Assign(ctx, Assignment{Worker: "w", Start: time.Now(), End: time.Now().Add(time.Hour), Tasks: newTasks("before")})
		if err != nil {
			t.Fatal(err)
		}
		// Back to the schema before 005, as a store of an earlier release.
		for _, stmt := range []string{`ALTER TABLE dispatch_tasks DROP COLUMN trace_context`, `DELETE FROM dispatch_schema WHERE version = 5`} {
			if _, err := old.DB().ExecContext(ctx, stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
		if err := old.Close(ctx); err != nil {
			t.Fatal(err)
		}

		cfg.TracerProvider = tp
		cfg.FinishOnReturn = true
		cfg.OnStart = func(context.Context, Task) error { return nil }
		d := open(t, cfg)
		if v, ok := traceColumn(t, d, before[0].UUID); ok {
			t.Errorf("a task from before the migration has trace_context %q, want NULL", v)
		}
		actx, aspan := callerSpan(t, tp)
		after, err := d.Assign(actx, Assignment{Worker: "w", Start: time.Now(), End: time.Now().Add(time.Hour), Tasks: newTasks("after")})
		aspan.End()
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, d, before[0].UUID, StatusFinished)
		waitStatus(t, d, after[0].UUID, StatusFinished)
		for _, s := range endedSpans(t, rec, DispatchSpanName, 2) {
			switch attrs(s)[AttrTask].AsString() {
			case before[0].UUID:
				if len(s.Links()) != 0 {
					t.Errorf("before: links %v, want none", s.Links())
				}
			case after[0].UUID:
				checkAssignLink(t, "after", s, aspan.SpanContext())
			}
		}
	})
}

// An assignment posted over REST by a client that sends a traceparent
// header (any language, no instrumented server) links its dispatches to
// the client's trace; a garbage header links nothing and assigns all the
// same.
func TestRESTAssignLinksToTheTraceparentHeader(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		tp, rec := recorder(t)
		cfg.TracerProvider = tp
		cfg.FinishOnReturn = true
		cfg.OnStart = func(context.Context, Task) error { return nil }
		d := open(t, cfg)
		mustWorker(t, d, "w", 5)
		h, err := NewHandler(d, HandlerConfig{Token: testToken, Logger: testlog.Logger(t)})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		defer srv.Close()
		const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		post := func(ext, traceparent string) string {
			t.Helper()
			now := time.Now().UTC()
			body := `{"worker":"w","start":"` + now.Add(-time.Second).Format(time.RFC3339Nano) + `","end":"` +
				now.Add(time.Hour).Format(time.RFC3339Nano) + `","tasks":[{"external_id":"` + ext + `"}]}`
			req, err := http.NewRequestWithContext(testCtx(t), "POST", srv.URL+"/v1/assign", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+testToken)
			req.Header.Set("traceparent", traceparent)
			req.Header.Set("tracestate", "vendor=opaque-1")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("assign %s: status %d: %s", ext, resp.StatusCode, raw)
			}
			var out struct {
				Tasks []struct {
					UUID string `json:"uuid"`
				} `json:"tasks"`
			}
			if err := json.Unmarshal(raw, &out); err != nil || len(out.Tasks) != 1 {
				t.Fatalf("assign %s: %q (%v)", ext, raw, err)
			}
			return out.Tasks[0].UUID
		}
		linked := post("linked", parent)
		garbage := post("garbage", "00-not-a-trace-01")
		if v, ok := traceColumn(t, d, linked); !ok || !strings.HasPrefix(v, parent) {
			t.Errorf("linked: trace_context %q (null %v), want the header's %s", v, !ok, parent)
		}
		if v, ok := traceColumn(t, d, garbage); ok {
			t.Errorf("garbage header: trace_context %q, want NULL", v)
		}
		if err := d.Start(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, d, linked, StatusFinished)
		waitStatus(t, d, garbage, StatusFinished)
		want := trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
			SpanID:  trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7}, TraceFlags: trace.FlagsSampled,
		})
		ts, err := trace.ParseTraceState("vendor=opaque-1")
		if err != nil {
			t.Fatal(err)
		}
		want = want.WithTraceState(ts)
		for _, s := range endedSpans(t, rec, DispatchSpanName, 2) {
			switch a := attrs(s); a[AttrTask].AsString() {
			case linked:
				checkAssignLink(t, "REST assign", s, want)
			case garbage:
				if len(s.Links()) != 0 {
					t.Errorf("garbage header: links %v, want none", s.Links())
				}
			}
		}
	})
}
