package jobfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
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

// A run file is a job file (job.File: regcenter:, jobs:) with one more
// top-level section, which only an instance that runs the file uses:
//
//	tracing:
//	  exporter: otlp                     # or stdout; required
//	  endpoint: http://127.0.0.1:4318    # OTLP/HTTP; otlp only
//	  headers: {X-Tenant: shop}          # otlp only
//	  sampleRatio: 0.25                  # 0..1, default 1
//	  serviceName: orders-jobs           # default "shardjob"
//
// Load and LoadFile read it; job.Load only keeps it, undecoded
// (job.File.Tracing), and a Go program that loads a run file with
// job.Load gets no tracing from it.

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

// File is a run file: the job file and its tracing section.
type File struct {
	job.File
	// Tracing is the tracing section; nil when the file has none, and
	// then the instance makes no span.
	Tracing *Tracing
}

// Tracing is a run file's tracing section: where an instance that runs
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

// problems joins the problems of a run file as errors.Join does, printed
// the way the job package prints its own.
type problems []error

func (p problems) Error() string {
	if len(p) == 1 {
		return p[0].Error()
	}
	msgs := make([]string, len(p))
	for i, err := range p {
		msgs[i] = err.Error()
	}
	return fmt.Sprintf("%d problems:\n\t* %s", len(p), strings.Join(msgs, "\n\t* "))
}

// Unwrap returns the problems.
func (p problems) Unwrap() []error { return p }

// LoadFile reads the run file at path and loads it as Load does. Errors
// about the contents are prefixed with path.
func LoadFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("jobfile: %w", err)
	}
	f, err := load(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Load reads a run file from r: a job file (see job.Load, whose rules and
// limits apply to all of it) that may have a tracing section (see
// Tracing), decoded as strictly as the rest: unknown keys (with a "did you
// mean"), values of the wrong kind or out of range, and the OTLP keys
// with the stdout exporter are errors wrapping ErrInvalidTracing and
// job.ErrInvalidConfig. Every problem of the file is reported, in one
// error whose Unwrap() []error returns them. On error the File is nil.
func Load(r io.Reader) (*File, error) {
	data, err := io.ReadAll(io.LimitReader(r, job.MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("jobfile: reading the run file: %w", err)
	}
	return load(data)
}

func load(data []byte) (*File, error) {
	jf, err := job.Load(bytes.NewReader(data))
	var errs []error
	if err != nil {
		var many interface{ Unwrap() []error }
		if !errors.As(err, &many) {
			return nil, err
		}
		errs = many.Unwrap()
	}
	section := tracingSection(jf, data)
	var tr *Tracing
	if section != nil {
		var terr []error
		tr, terr = decodeTracing(deref(section))
		errs = append(errs, terr...)
	}
	if len(errs) > 0 {
		return nil, problems(errs)
	}
	return &File{File: *jf, Tracing: tr}, nil
}

// tracingSection returns the file's tracing section: as job.Load kept it,
// or, when job.Load found problems elsewhere in the file, read here, so
// that one error lists every problem of the file. Nil when there is none.
func tracingSection(jf *job.File, data []byte) *yaml.Node {
	if jf != nil {
		return jf.Tracing
	}
	var doc yaml.Node
	if len(data) > job.MaxFileBytes || yaml.Unmarshal(data, &doc) != nil || doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil // job.Load named the problem
	}
	root := deref(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := root.Content[i]; k.Value == "tracing" {
			v := deref(root.Content[i+1])
			if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" {
				return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: k.Line, Column: k.Column}
			}
			return v
		}
	}
	return nil
}

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
