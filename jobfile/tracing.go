package jobfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.yaml.in/yaml/v3"

	"github.com/shardjob/shardjob/internal/suggest"
	"github.com/shardjob/shardjob/job"
)

// A job file may have one more top-level section, which only an instance
// that runs the file (Run, shardjob run) uses:
//
//	tracing:
//	  exporter: otlp                     # or stdout; required
//	  endpoint: http://127.0.0.1:4318    # OTLP/HTTP; otlp only
//	  headers: {X-Tenant: shop}          # otlp only
//	  sampleRatio: 0.25                  # 0..1, default 1
//	  serviceName: orders-jobs           # default "shardjob"
//
// Load and LoadFile decode it into File.Tracing, as strictly as the rest
// of the file: unknown keys (with a "did you mean"), values of the wrong
// kind or out of range, and the OTLP keys with the stdout exporter are
// errors wrapping ErrInvalidTracing and job.ErrInvalidConfig.

// ErrInvalidTracing means a run file's tracing section cannot be used;
// the error names the key and its line. It comes with job.ErrInvalidConfig.
var ErrInvalidTracing = errors.New("jobfile: invalid tracing section")

// The exporters a tracing section may name.
const (
	// ExporterOTLP sends spans to a collector over OTLP/HTTP (protobuf).
	ExporterOTLP = "otlp"
	// ExporterStdout prints spans as JSON, one object per span, to the
	// instance's standard output (RunOptions.Stdout).
	ExporterStdout = "stdout"
)

// DefaultServiceName is the service.name resource attribute of an
// instance's spans when the tracing section has no serviceName.
const DefaultServiceName = "shardjob"

// Bounds on exporting, so that a collector that is down or hangs costs
// an instance neither fires nor a slow stop: spans are handed to the
// exporter in batches, off the fire path (a full queue drops spans rather
// than wait), one export may take ExportTimeout, retries included, and the
// flush at shutdown waits FlushTimeout at most.
const (
	// ExportTimeout bounds one export of a batch of spans.
	ExportTimeout = 10 * time.Second
	// FlushTimeout bounds the export of the last spans when Run returns.
	FlushTimeout = 5 * time.Second
)

// tracingKeys are the keys of the tracing section.
var tracingKeys = []string{"exporter", "endpoint", "headers", "sampleRatio", "serviceName"}

// Tracing is a job file's tracing section: where an instance that runs
// the file sends its spans (see job.WithTracerProvider for what is
// traced).
type Tracing struct {
	// Exporter is ExporterOTLP or ExporterStdout.
	Exporter string
	// Endpoint is the OTLP/HTTP collector's URL, http or https (the
	// scheme decides TLS). Without a path (http://127.0.0.1:4318) the
	// spans go to its /v1/traces, as with OTEL_EXPORTER_OTLP_ENDPOINT;
	// with one, to that path, as with OTEL_EXPORTER_OTLP_TRACES_ENDPOINT.
	// "" means what those variables say, or the exporter's default,
	// http://localhost:4318/v1/traces. OTLP only.
	Endpoint string
	// Headers are sent with every export; they replace those of
	// OTEL_EXPORTER_OTLP_HEADERS, which the exporter reads when Headers is
	// nil (the place for a credential: the environment, not the file).
	// OTLP only.
	Headers map[string]string
	// SampleRatio is the share of fires traced, 0 to 1: a fire's span is
	// sampled by its trace id, its items' spans follow it (parent-based).
	// Load sets the default, 1.
	SampleRatio float64
	// ServiceName is the service.name resource attribute; Load sets the
	// default, DefaultServiceName.
	ServiceName string
}

// tracingError is one problem with a tracing section (or a near miss of
// its key): it matches job.ErrInvalidConfig and ErrInvalidTracing, or
// job.ErrUnknownKey for a near miss.
type tracingError struct {
	msg  string
	kind error
}

func (e *tracingError) Error() string { return e.msg }

func (e *tracingError) Unwrap() []error { return []error{job.ErrInvalidConfig, e.kind} }

// decodeTracing decodes the tracing section n, applying the defaults.
func decodeTracing(n *yaml.Node) (*Tracing, []error) {
	s := &section{name: "tracing"}
	wrap := func() []error {
		errs := make([]error, len(s.errs))
		for i, m := range s.errs {
			errs[i] = &tracingError{msg: m, kind: ErrInvalidTracing}
		}
		return errs
	}
	if n.Kind != yaml.MappingNode {
		s.errs = append(s.errs, fmt.Sprintf("tracing at line %d: must be a mapping with at least exporter: otlp or exporter: stdout", n.Line))
		return nil, wrap()
	}
	p := s.pairs(n, tracingKeys...)
	t := &Tracing{SampleRatio: 1, ServiceName: DefaultServiceName}
	if !s.str(p, "exporter", &t.Exporter) {
		if _, given := p["exporter"]; !given {
			s.failf(n, "exporter", "is required: otlp (a collector, over OTLP/HTTP) or stdout")
		}
	} else if t.Exporter != ExporterOTLP && t.Exporter != ExporterStdout {
		hint := ""
		if m := suggest.Nearest(t.Exporter, []string{ExporterOTLP, ExporterStdout}); m != "" {
			hint = fmt.Sprintf(" (did you mean %q?)", m)
		}
		s.failf(p["exporter"][0], "exporter", "%q is not an exporter%s: use otlp or stdout", t.Exporter, hint)
	}
	if s.str(p, "endpoint", &t.Endpoint) {
		if err := checkEndpoint(t.Endpoint); err != "" {
			s.failf(p["endpoint"][0], "endpoint", "%q %s", t.Endpoint, err)
		}
	}
	s.strMap(p, "headers", &t.Headers)
	for k := range t.Headers {
		if strings.TrimSpace(k) == "" || strings.ContainsAny(k, " \t\r\n:") {
			s.failf(p["headers"][0], "headers", "%q is not a header name", k)
		}
	}
	if t.Exporter == ExporterStdout {
		for _, k := range []string{"endpoint", "headers"} {
			if kv, ok := p[k]; ok {
				s.failf(kv[0], k, "applies to exporter: otlp only, not stdout")
			}
		}
	}
	if kv, ok := p["sampleRatio"]; ok {
		v := kv[1]
		r, err := strconv.ParseFloat(v.Value, 64)
		switch {
		case v.Kind != yaml.ScalarNode || (v.ShortTag() != "!!float" && v.ShortTag() != "!!int") || err != nil || math.IsNaN(r):
			s.failf(kv[0], "sampleRatio", "must be a number from 0 to 1, got %q", v.Value)
		case r < 0 || r > 1:
			s.failf(kv[0], "sampleRatio", "%v is out of range: from 0 (no fire traced) to 1 (every fire)", r)
		default:
			t.SampleRatio = r
		}
	}
	if s.str(p, "serviceName", &t.ServiceName) && strings.TrimSpace(t.ServiceName) == "" {
		s.failf(p["serviceName"][0], "serviceName", "must not be empty")
	}
	if len(s.errs) > 0 {
		return nil, wrap()
	}
	return t, nil
}

// checkEndpoint says what is wrong with an OTLP/HTTP endpoint, or "".
func checkEndpoint(e string) string {
	u, err := url.Parse(e)
	switch {
	case err != nil || u.Scheme == "" || u.Host == "":
		return "is not a URL such as http://127.0.0.1:4318 (the scheme, http or https, says whether TLS is used)"
	case u.Scheme != "http" && u.Scheme != "https":
		return "must use http or https (OTLP over HTTP; gRPC is not supported)"
	case u.RawQuery != "" || u.Fragment != "":
		return "must have no query or fragment"
	case u.User != nil:
		return "must not hold credentials: send them in headers, or OTEL_EXPORTER_OTLP_HEADERS"
	}
	return ""
}

// NewTracerProvider returns a tracer provider exporting to t's exporter
// in batches (see ExportTimeout), with t's sampler and a resource whose
// service.name is t.ServiceName (besides the SDK's attributes and
// OTEL_RESOURCE_ATTRIBUTES). The stdout exporter writes to stdout. No
// connection is made here. The caller shuts the provider down, which
// exports the last spans.
func (t *Tracing) NewTracerProvider(ctx context.Context, stdout io.Writer) (*sdktrace.TracerProvider, error) {
	if t.SampleRatio < 0 || t.SampleRatio > 1 || math.IsNaN(t.SampleRatio) {
		return nil, fmt.Errorf("%w: %w: sampleRatio %v is out of range 0..1", job.ErrInvalidConfig, ErrInvalidTracing, t.SampleRatio)
	}
	var exp sdktrace.SpanExporter
	var err error
	switch t.Exporter {
	case ExporterStdout:
		exp, err = stdouttrace.New(stdouttrace.WithWriter(stdout))
	case ExporterOTLP:
		var opts []otlptracehttp.Option
		if t.Endpoint != "" {
			if msg := checkEndpoint(t.Endpoint); msg != "" {
				return nil, fmt.Errorf("%w: %w: endpoint %q %s", job.ErrInvalidConfig, ErrInvalidTracing, t.Endpoint, msg)
			}
			u, perr := url.Parse(t.Endpoint)
			if perr != nil {
				return nil, fmt.Errorf("%w: %w: endpoint %q: %w", job.ErrInvalidConfig, ErrInvalidTracing, t.Endpoint, perr)
			}
			if u.Path == "" || u.Path == "/" {
				u.Path = "/v1/traces"
			}
			opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
		}
		if t.Headers != nil {
			opts = append(opts, otlptracehttp.WithHeaders(t.Headers))
		}
		exp, err = otlptracehttp.New(ctx, opts...)
	default:
		return nil, fmt.Errorf("%w: %w: exporter %q: use otlp or stdout", job.ErrInvalidConfig, ErrInvalidTracing, t.Exporter)
	}
	if err != nil {
		return nil, fmt.Errorf("jobfile: tracing: %s exporter: %w", t.Exporter, err)
	}
	name := t.ServiceName
	if name == "" {
		name = DefaultServiceName
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(name)))
	if err != nil {
		return nil, fmt.Errorf("jobfile: tracing: resource: %w", err)
	}
	return sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithExportTimeout(ExportTimeout)),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(t.SampleRatio))),
		sdktrace.WithResource(res),
	), nil
}
