package main

import (
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/shardjob/shardjob/job"
)

// The chain's spans print as the demo's other lines do, one short line
// each, not as the exporter's JSON mixed into them.
func TestASpanIsOneLineOfTheDemo(t *testing.T) {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	tid, _ := trace.TraceIDFromHex("27d3c3d11c59d5ef4c07a85d90b25d1a")
	sid, _ := trace.SpanIDFromHex("82bcabbb77fb4ba2")
	pid, _ := trace.SpanIDFromHex("6b531126da156feb")
	stub := tracetest.SpanStub{
		Name:        "shardjob.item",
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid}),
		Parent:      trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: pid}),
		StartTime:   start,
		EndTime:     start.Add(301 * time.Millisecond),
		Attributes:  []attribute.KeyValue{job.AttrJob.String("extract"), job.AttrItem.Int(2)},
	}
	got := spanLine(stub.Snapshot())
	want := "trace: extract   shardjob.item item 2, 301ms, trace 27d3c3d1 span 82bcabbb in 6b531126"
	if got != want {
		t.Errorf("spanLine = %q, want %q", got, want)
	}
	if strings.ContainsAny(got, "{\n") {
		t.Errorf("spanLine = %q: not one plain line", got)
	}
}
