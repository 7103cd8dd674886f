package httpjob_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/jobtype/httpjob"
)

// traceServer records the trace context headers of every request.
func traceServer(t *testing.T) (*httptest.Server, chan [2]string) {
	got := make(chan [2]string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- [2]string{r.Header.Get("traceparent"), r.Header.Get("tracestate")}
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// An item's span travels with the request as the W3C traceparent and
// tracestate headers; without one the request carries neither.
func TestRequestCarriesTheItemsTraceContext(t *testing.T) {
	srv, got := traceServer(t)
	j, err := httpjob.New(httpjob.Config{AllowPrivateAddresses: true, URL: srv.URL, Logger: testlog.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := trace.ParseTraceState("vendor=abc")
	if err != nil {
		t.Fatal(err)
	}
	span := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
		TraceState: ts,
	})
	if err := j.Execute(trace.ContextWithSpanContext(context.Background(), span), sc(0, "p")); err != nil {
		t.Fatal(err)
	}
	h := <-got
	want := "00-" + span.TraceID().String() + "-" + span.SpanID().String() + "-01"
	if h[0] != want || h[1] != "vendor=abc" {
		t.Errorf("traceparent, tracestate = %q, %q; want %q, vendor=abc", h[0], h[1], want)
	}

	if err := j.Execute(context.Background(), sc(0, "p")); err != nil {
		t.Fatal(err)
	}
	if h := <-got; h != [2]string{} {
		t.Errorf("without a span the request carried traceparent, tracestate = %q, %q", h[0], h[1])
	}
}

// The trace context's headers are the scheduler's: a config naming one is
// refused, naming it.
func TestConfigNamingTraceHeadersIsRefused(t *testing.T) {
	for _, cfg := range []httpjob.Config{
		{URL: "http://127.0.0.1:1/", Header: map[string]string{"Traceparent": "00-x"}},
		{URL: "http://127.0.0.1:1/", Header: map[string]string{"TRACESTATE": "a=b"}},
		{URL: "http://127.0.0.1:1/", ContextHeader: "traceparent"},
	} {
		_, err := httpjob.New(cfg)
		if !errors.Is(err, httpjob.ErrInvalidConfig) {
			t.Errorf("%+v: err = %v, want ErrInvalidConfig", cfg, err)
			continue
		}
		if !strings.Contains(strings.ToLower(err.Error()), "trace") {
			t.Errorf("%+v: error %q does not name the header", cfg, err)
		}
	}
}
