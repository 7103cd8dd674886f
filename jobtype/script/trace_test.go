package script_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/shardjob/shardjob/jobtype/script"
)

// spanCtx returns a context carrying a sampled remote span with a trace
// state, as the scheduler's item span would be.
func spanCtx(t *testing.T) (context.Context, trace.SpanContext) {
	t.Helper()
	ts, err := trace.ParseTraceState("vendor=abc")
	if err != nil {
		t.Fatal(err)
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
		TraceState: ts,
	})
	return trace.ContextWithSpanContext(context.Background(), sc), sc
}

// runEnvCtx runs, under ctx, a script job writing its environment to a
// file, and returns it as a map.
func runEnvCtx(t *testing.T, ctx context.Context, cfg script.Config) map[string]string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "env")
	cfg.Shell = true
	cfg.Command = []string{"/usr/bin/env > " + out}
	if err := newJob(t, cfg).Execute(ctx, sc(1, "p")); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for line := range strings.Lines(string(data)) {
		k, v, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "=")
		got[k] = v
	}
	return got
}

// An item's span reaches the command as TRACEPARENT and TRACESTATE, in
// the W3C trace context's form; the instance's own TRACEPARENT never does.
func TestScriptGetsTheItemsTraceParent(t *testing.T) {
	t.Setenv("TRACEPARENT", "00-11111111111111111111111111111111-2222222222222222-01")
	t.Setenv("TRACESTATE", "instance=own")
	ctx, span := spanCtx(t)
	got := runEnvCtx(t, ctx, script.Config{})
	want := "00-" + span.TraceID().String() + "-" + span.SpanID().String() + "-01"
	if got[script.TraceParentEnv] != want {
		t.Errorf("TRACEPARENT = %q, want %q", got[script.TraceParentEnv], want)
	}
	if got[script.TraceStateEnv] != "vendor=abc" {
		t.Errorf("TRACESTATE = %q, want vendor=abc", got[script.TraceStateEnv])
	}
}

// Without a span (tracing off) the command gets neither variable, even
// when the instance has them.
func TestScriptWithoutSpanGetsNoTraceParent(t *testing.T) {
	t.Setenv("TRACEPARENT", "00-11111111111111111111111111111111-2222222222222222-01")
	t.Setenv("TRACESTATE", "instance=own")
	got := runEnvCtx(t, context.Background(), script.Config{})
	for _, k := range []string{script.TraceParentEnv, script.TraceStateEnv} {
		if v, ok := got[k]; ok {
			t.Errorf("%s = %q reached the command without a span", k, v)
		}
	}
}

// TRACEPARENT and TRACESTATE are the scheduler's: a config that sets or
// passes them is refused, naming the variable.
func TestScriptConfigNamingTraceVariablesIsRefused(t *testing.T) {
	for _, cfg := range []script.Config{
		{Command: []string{"true"}, Env: []string{"TRACEPARENT=00-x"}},
		{Command: []string{"true"}, Env: []string{"tracestate=a=b"}},
		{Command: []string{"true"}, PassEnv: []string{"TRACEPARENT"}},
		{Command: []string{"true"}, PassEnv: []string{"TraceState"}},
	} {
		err := cfg.Validate()
		if !errors.Is(err, script.ErrInvalidConfig) {
			t.Errorf("%+v: err = %v, want ErrInvalidConfig", cfg, err)
			continue
		}
		if !strings.Contains(strings.ToUpper(err.Error()), "TRACE") {
			t.Errorf("%+v: error %q does not name the variable", cfg, err)
		}
	}
}
