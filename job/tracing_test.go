package job_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobtype/httpjob"
	"github.com/shardjob/shardjob/jobtype/script"
)

// newTracing returns a tracer provider exporting every span, as it ends,
// to the in-memory exporter returned with it.
func newTracing(t *testing.T) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := tp.Shutdown(ctx); err != nil {
			t.Errorf("tracer provider shutdown: %v", err)
		}
	})
	return tp, exp
}

// attrs returns a span's attributes by key.
func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		out[kv.Key] = kv.Value
	}
	return out
}

// waitSpans polls exp until done accepts its spans, or fails the test at
// the deadline.
func waitSpans(t *testing.T, exp *tracetest.InMemoryExporter, deadline time.Duration, what string, done func(tracetest.SpanStubs) bool) tracetest.SpanStubs {
	t.Helper()
	end := time.After(deadline)
	for {
		spans := exp.GetSpans()
		if done(spans) {
			return spans
		}
		select {
		case <-end:
			t.Fatalf("no %s within %v; %d spans exported", what, deadline, len(spans))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// fireSpan returns the first span of a scheduled fire of name that ran
// items items here.
func fireSpan(spans tracetest.SpanStubs, name string, items int) (tracetest.SpanStub, bool) {
	for _, s := range spans {
		a := attrs(s)
		if s.Name == job.FireSpanName && a[job.AttrJob].AsString() == name &&
			a[job.AttrKind].AsString() == string(job.KindFire) && a[job.AttrItemCount].AsInt64() == int64(items) {
			return s, true
		}
	}
	return tracetest.SpanStub{}, false
}

// childrenOf returns the item spans whose parent is span.
func childrenOf(spans tracetest.SpanStubs, span tracetest.SpanStub) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == job.ItemSpanName && s.Parent.SpanID() == span.SpanContext.SpanID() {
			out = append(out, s)
		}
	}
	return out
}

// With a tracer provider, each fire here is a span and each item run a
// child span carrying the job, item, kind, fire and instance; the job's
// context carries the item's span (a span the job starts is its child),
// and a failed run is recorded on its span and counted on the fire's.
func TestTracingSpansPerFireAndItem(t *testing.T) {
	tp, exp := newTracing(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const name, items = "traced", 3
	rc, s := connect(t, ctx, namespace(t), "tr-1", job.WithTracerProvider(tp))
	in := &instance{id: "tr-1", rc: rc, sched: s}
	t.Cleanup(func() { in.stop(t) })

	var mu sync.Mutex
	seen := map[string]trace.SpanContext{} // fire@item -> the span Execute's ctx carried
	boom := errors.New("boom")
	user := tp.Tracer("user-code")
	err := s.Add(ctx, everySecond(name, items), job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
		_, span := user.Start(ctx, "user-work")
		span.End()
		mu.Lock()
		seen[fmt.Sprintf("%s@%d", sc.FireTime.UTC().Format(time.RFC3339Nano), sc.Item)] = trace.SpanContextFromContext(ctx)
		mu.Unlock()
		if sc.Item == 1 {
			return boom
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}

	var fire tracetest.SpanStub
	spans := waitSpans(t, exp, 20*time.Second, "fire span of 3 items", func(spans tracetest.SpanStubs) bool {
		var ok bool
		fire, ok = fireSpan(spans, name, items)
		return ok
	})
	fa := attrs(fire)
	at := fa[job.AttrFireTime].AsString()
	if _, err := time.Parse(time.RFC3339Nano, at); err != nil {
		t.Errorf("fire span's fire time %q: %v", at, err)
	}
	if got := fa[job.AttrServerID].AsString(); got != "tr-1" {
		t.Errorf("fire span's server id = %q, want tr-1", got)
	}
	if fire.Parent.IsValid() {
		t.Errorf("fire span has a parent: %v", fire.Parent)
	}
	if fire.Status.Code != codes.Error || fa[job.AttrFailedItems].AsInt64() != 1 {
		t.Errorf("fire span: status %v, failed items %v; want Error and 1", fire.Status, fa[job.AttrFailedItems].Emit())
	}

	children := childrenOf(spans, fire)
	if len(children) != items {
		t.Fatalf("fire span has %d item spans, want %d", len(children), items)
	}
	got := map[int64]bool{}
	mu.Lock()
	defer mu.Unlock()
	for _, c := range children {
		a := attrs(c)
		item := a[job.AttrItem].AsInt64()
		got[item] = true
		if c.SpanContext.TraceID() != fire.SpanContext.TraceID() {
			t.Errorf("item %d: trace %v, fire's %v", item, c.SpanContext.TraceID(), fire.SpanContext.TraceID())
		}
		for k, want := range map[attribute.Key]string{job.AttrJob: name, job.AttrKind: string(job.KindFire),
			job.AttrFireTime: at, job.AttrThrough: at, job.AttrServerID: "tr-1"} {
			if a[k].AsString() != want {
				t.Errorf("item %d: %s = %q, want %q", item, k, a[k].AsString(), want)
			}
		}
		if sc := seen[fmt.Sprintf("%s@%d", at, item)]; !sc.Equal(c.SpanContext) {
			t.Errorf("item %d: Execute's context carried span %v, want the item span %v", item, sc, c.SpanContext)
		}
		wantStatus := codes.Ok
		if item == 1 {
			wantStatus = codes.Error
			if len(c.Events) == 0 || c.Events[0].Name != "exception" || !strings.Contains(c.Status.Description, "boom") {
				t.Errorf("item 1: events %v, status %v; want the error recorded", c.Events, c.Status)
			}
		}
		if c.Status.Code != wantStatus {
			t.Errorf("item %d: status %v, want %v", item, c.Status, wantStatus)
		}
		var users int
		for _, u := range spans {
			if u.Name == "user-work" && u.Parent.SpanID() == c.SpanContext.SpanID() {
				users++
			}
		}
		if users != 1 {
			t.Errorf("item %d: %d child spans started by the job, want 1", item, users)
		}
	}
	if len(got) != items {
		t.Errorf("item spans cover items %v, want 0-%d", got, items-1)
	}
}

// Tracing is off by default: the job's context carries no span.
func TestTracingOffByDefault(t *testing.T) {
	rec := newRecorder()
	valid := make(chan bool, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, s := connect(t, ctx, namespace(t), "off-1")
	in := &instance{id: "off-1", rc: rc, sched: s}
	t.Cleanup(func() { in.stop(t) })
	err := s.Add(ctx, everySecond("untraced", 1), job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
		select {
		case valid <- trace.SpanContextFromContext(ctx).IsValid():
		default:
		}
		return rec.job("off-1").Execute(ctx, sc)
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-valid:
		if v {
			t.Error("without WithTracerProvider the job's context carries a span")
		}
	case <-ctx.Done():
		t.Fatal("the job did not run")
	}
	if _, err := job.NewScheduler(rc, job.WithTracerProvider(nil)); !errors.Is(err, job.ErrInvalidOption) {
		t.Errorf("WithTracerProvider(nil): err = %v, want ErrInvalidOption", err)
	}
}

// The item's span reaches a script job's command as TRACEPARENT and an
// HTTP job's request as the traceparent header, so that what they run
// continues the trace.
func TestTracingReachesScriptAndHTTPJobs(t *testing.T) {
	tp, exp := newTracing(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, s := connect(t, ctx, namespace(t), "tr-2", job.WithTracerProvider(tp))
	in := &instance{id: "tr-2", rc: rc, sched: s}
	t.Cleanup(func() { in.stop(t) })

	// The script writes its TRACEPARENT to a file of its own, named by its
	// pid, renamed into place once written.
	dir := t.TempDir()
	sj, err := script.New(script.Config{Shell: true, Env: []string{"OUT=" + dir}, Logger: testLogger(t),
		Command: []string{`printf '%s\n' "$TRACEPARENT" > "$OUT/.$$" && mv "$OUT/.$$" "$OUT/$$"`}})
	if err != nil {
		t.Fatal(err)
	}
	headers := make(chan string, 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case headers <- r.Header.Get("traceparent"):
		default:
		}
	}))
	t.Cleanup(srv.Close)
	hj, err := httpjob.New(httpjob.Config{AllowPrivateAddresses: true, URL: srv.URL, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(ctx, everySecond("traced-script", 2), sj); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(ctx, everySecond("traced-http", 1), hj); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}

	// itemSpan finds the exported item span of jobName that traceparent
	// names (version-traceid-spanid-flags).
	itemSpan := func(spans tracetest.SpanStubs, jobName, traceparent string) (tracetest.SpanStub, bool) {
		parts := strings.Split(strings.TrimSpace(traceparent), "-")
		if len(parts) != 4 {
			return tracetest.SpanStub{}, false
		}
		for _, s := range spans {
			if s.Name == job.ItemSpanName && attrs(s)[job.AttrJob].AsString() == jobName &&
				s.SpanContext.TraceID().String() == parts[1] && s.SpanContext.SpanID().String() == parts[2] {
				return s, true
			}
		}
		return tracetest.SpanStub{}, false
	}

	var header string
	select {
	case header = <-headers:
	case <-ctx.Done():
		t.Fatal("the HTTP job sent no request")
	}
	if header == "" {
		t.Fatal("the HTTP job's request carried no traceparent")
	}
	waitSpans(t, exp, 10*time.Second, "item span named by the HTTP request's traceparent "+header, func(spans tracetest.SpanStubs) bool {
		_, ok := itemSpan(spans, "traced-http", header)
		return ok
	})

	// Every script run seen (at least the two items of one fire) had the
	// TRACEPARENT of its own item span.
	var parents []string
	waitSpans(t, exp, 20*time.Second, "item spans named by two script runs' TRACEPARENT", func(spans tracetest.SpanStubs) bool {
		parents = parents[:0]
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			parents = append(parents, strings.TrimSpace(string(data)))
		}
		if len(parents) < 2 {
			return false
		}
		for _, p := range parents {
			if _, ok := itemSpan(spans, "traced-script", p); !ok {
				return false
			}
		}
		return true
	})
	seen := map[string]bool{}
	for _, p := range parents {
		if seen[p] {
			t.Errorf("two script runs had TRACEPARENT %s", p)
		}
		seen[p] = true
	}
}
