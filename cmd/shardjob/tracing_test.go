package main

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"

	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/job"
)

// collector is an OTLP/HTTP trace collector: it decodes what the exporter
// POSTs to /v1/traces.
type collector struct {
	srv *httptest.Server

	mu       sync.Mutex
	posts    int
	bad      []string // what was wrong with a request
	headers  []http.Header
	spans    []gotSpan
	services map[string]bool // service.name of every resource seen
}

// gotSpan is one span the collector received.
type gotSpan struct {
	name            string
	traceID, spanID string // hex
	attrs           map[string]string
}

// hang, when not nil, holds every request until it is closed.
func newCollector(t *testing.T, hang chan struct{}) *collector {
	c := &collector{services: map[string]bool{}}
	c.srv = httptest.NewServer(http.HandlerFunc(c.serve(hang)))
	t.Cleanup(func() {
		if hang != nil {
			close(hang)
		}
		c.srv.Close()
	})
	return c
}

func (c *collector) serve(hang chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.posts++
		c.headers = append(c.headers, r.Header.Clone())
		c.mu.Unlock()
		if hang != nil {
			select {
			case <-hang:
			case <-r.Context().Done():
			}
			return
		}
		req, err := decodeExport(r)
		c.mu.Lock()
		defer c.mu.Unlock()
		if err != nil {
			c.bad = append(c.bad, err.Error())
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range req.GetResourceSpans() {
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.GetKey() == "service.name" {
					c.services[kv.GetValue().GetStringValue()] = true
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, sp := range ss.GetSpans() {
					c.spans = append(c.spans, gotSpan{name: sp.GetName(), traceID: fmt.Sprintf("%x", sp.GetTraceId()),
						spanID: fmt.Sprintf("%x", sp.GetSpanId()), attrs: attrMap(sp.GetAttributes())})
				}
			}
		}
		body, err := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		if err != nil {
			c.bad = append(c.bad, err.Error())
			return
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		if _, err := w.Write(body); err != nil {
			c.bad = append(c.bad, err.Error())
		}
	}
}

func decodeExport(r *http.Request) (*coltracepb.ExportTraceServiceRequest, error) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		return nil, fmt.Errorf("%s %s (%s): want POST /v1/traces, application/x-protobuf", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, err
		}
		defer gz.Close()
		body = gz
	}
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(data, &req); err != nil {
		return nil, fmt.Errorf("not an ExportTraceServiceRequest: %w", err)
	}
	return &req, nil
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		v := kv.GetValue()
		if s, ok := v.GetValue().(*commonpb.AnyValue_StringValue); ok {
			m[kv.GetKey()] = s.StringValue
		} else {
			m[kv.GetKey()] = fmt.Sprint(v.GetValue())
		}
	}
	return m
}

func (c *collector) snapshot() (posts int, bad []string, headers []http.Header, spans []gotSpan, services map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	svc := map[string]bool{}
	for k := range c.services {
		svc[k] = true
	}
	return c.posts, append([]string(nil), c.bad...), append([]http.Header(nil), c.headers...), append([]gotSpan(nil), c.spans...), svc
}

// runTraced runs "shardjob run" on a file with a script job that records
// its TRACEPARENT, until the job has run runs times, then stops it; it
// returns the recorded values and the log.
func runTraced(t *testing.T, tracing string, runs int) ([]string, string) {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, "traceparents")
	path := writeJobsFile(t, fmt.Sprintf(`regcenter:
  servers: [%s]
  namespace: %s
%sjobs:
  - name: traced-report
    type: script
    cron: "* * * * * *"
    shardingTotalCount: 2
    script:
      command: [/bin/sh, -c, 'echo "tp=$TRACEPARENT" >> %s']
`, strings.Join(zc.Servers(), ","), newNamespace(), tracing, out))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr testlog.Buffer
	done := make(chan int, 1)
	go func() { // owned here: ends when ctx is cancelled below
		done <- runFileCtx(ctx, []string{"--server-id", "cli-trace", "--state-dir", filepath.Join(dir, "state"), path}, &stdout, &stderr)
	}()
	deadline := time.After(60 * time.Second)
	for {
		data, _ := os.ReadFile(out)
		if strings.Count(string(data), "\n") >= runs {
			break
		}
		select {
		case code := <-done:
			t.Fatalf("shardjob run ended with %d: %s", code, stderr.String())
		case <-deadline:
			t.Fatalf("no %d runs within a minute: %s", runs, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("exit %d after stop: %s", code, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("shardjob run did not stop")
	}
	if stdout.String() != "" {
		t.Errorf("standard output: %q, want nothing", stdout.String())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var tps []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		tps = append(tps, strings.TrimPrefix(line, "tp="))
	}
	return tps, stderr.String()
}

// shardjob run with a tracing section sends the spans of its fires and
// item runs to the collector, with the job, the service name and the
// headers the file gives; the script's TRACEPARENT is its item's span.
func TestRunTracesToOTLPCollector(t *testing.T) {
	col := newCollector(t, nil)
	tps, log := runTraced(t, fmt.Sprintf(`tracing:
  exporter: otlp
  endpoint: %s
  headers: {X-Collector-Token: t0k}
  serviceName: traced-jobs
`, col.srv.URL), 4)

	// The spans ended before shardjob run returned: its stop flushed them.
	posts, bad, headers, spans, services := col.snapshot()
	if len(bad) > 0 {
		t.Fatalf("bad exports: %v", bad)
	}
	if posts == 0 {
		t.Fatalf("nothing exported; log:\n%s", log)
	}
	for _, h := range headers {
		if h.Get("X-Collector-Token") != "t0k" {
			t.Errorf("an export without the file's header: %v", h)
		}
	}
	if !services["traced-jobs"] || len(services) != 1 {
		t.Errorf("service.name of the resources: %v, want traced-jobs alone", services)
	}
	fires, items := 0, map[string]gotSpan{} // items by span id
	for _, sp := range spans {
		if sp.attrs[string(job.AttrJob)] != "traced-report" {
			t.Errorf("span %s has job %q", sp.name, sp.attrs[string(job.AttrJob)])
		}
		switch sp.name {
		case job.FireSpanName:
			fires++
		case job.ItemSpanName:
			items[sp.spanID] = sp
		default:
			t.Errorf("unexpected span %q", sp.name)
		}
	}
	if fires == 0 || len(items) == 0 {
		t.Fatalf("%d fire spans and %d item spans, want some of each", fires, len(items))
	}
	// Each run's TRACEPARENT (00-trace-span-flags) is an exported item span.
	for _, tp := range tps {
		parts := strings.Split(tp, "-")
		if len(parts) != 4 {
			t.Errorf("TRACEPARENT %q is not a W3C traceparent", tp)
			continue
		}
		if sp, ok := items[parts[2]]; !ok || sp.traceID != parts[1] {
			t.Errorf("TRACEPARENT %q is no exported item span", tp)
		}
	}
}

// Without a tracing section nothing is exported, even with the OTLP
// exporter's variables set, and the jobs run with no span: the script
// gets no TRACEPARENT.
func TestRunWithoutTracingExportsNothing(t *testing.T) {
	col := newCollector(t, nil)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.srv.URL)
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	tps, log := runTraced(t, "", 4)
	if posts, _, _, _, _ := col.snapshot(); posts != 0 {
		t.Errorf("%d exports without a tracing section", posts)
	}
	for _, tp := range tps {
		if tp != "" {
			t.Errorf("TRACEPARENT %q without a tracing section", tp)
		}
	}
	if strings.Contains(log, "tracing on") {
		t.Errorf("the log says tracing is on:\n%s", log)
	}
}

// A collector that takes the spans but never answers holds up neither the
// fires nor the stop: shardjob run gives up on the last spans at its
// deadline and says so.
func TestRunWithHangingCollectorStops(t *testing.T) {
	col := newCollector(t, make(chan struct{}))
	tps, log := runTraced(t, fmt.Sprintf("tracing: {exporter: otlp, endpoint: %q}\n", col.srv.URL), 4)
	if len(tps) < 4 {
		t.Fatalf("%d runs", len(tps))
	}
	if !strings.Contains(log, "the last spans were not exported") {
		t.Fatalf("no warning about the lost spans in the log:\n%s", log)
	}
	if posts, _, _, _, _ := col.snapshot(); posts == 0 {
		t.Fatal("the collector was never reached")
	}
}

// The stdout exporter prints the spans to shardjob run's standard output.
func TestRunTracesToStdout(t *testing.T) {
	dir := t.TempDir()
	path := writeJobsFile(t, fmt.Sprintf(`regcenter:
  servers: [%s]
  namespace: %s
tracing: {exporter: stdout, serviceName: printed-jobs}
jobs:
  - name: printed
    type: script
    cron: "* * * * * *"
    shardingTotalCount: 1
    script: {command: [/bin/true]}
`, strings.Join(zc.Servers(), ","), newNamespace()))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr testlog.Buffer
	done := make(chan int, 1)
	go func() { // owned here: ends when ctx is cancelled below
		done <- runFileCtx(ctx, []string{"--server-id", "cli-stdout", "--state-dir", filepath.Join(dir, "state"), path}, &stdout, &stderr)
	}()
	// The first batch is printed within the batcher's delay (5 s).
	deadline := time.After(60 * time.Second)
	for !strings.Contains(stdout.String(), `"Name":"`+job.ItemSpanName+`"`) {
		select {
		case code := <-done:
			t.Fatalf("shardjob run ended with %d: %s", code, stderr.String())
		case <-deadline:
			t.Fatalf("no item span printed within a minute: %s", stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("exit %d after stop: %s", code, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("shardjob run did not stop")
	}
	if !strings.Contains(stdout.String(), "printed-jobs") || strings.Contains(stderr.String(), `"Name":"`) {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
}
