package jobfile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobfile"
)

// runHead is a run file's regcenter section and one script job; the
// job's keys end at line 9.
const runHead = `regcenter:
  servers: [127.0.0.1:2181]
  namespace: shop
jobs:
  - name: report
    type: script
    cron: "0 * * * * *"
    shardingTotalCount: 2
    script: {command: [/bin/true]}
`

func TestLoadTracing(t *testing.T) {
	for _, c := range []struct {
		name, doc string
		want      *jobfile.Tracing
	}{
		{"absent", runHead, nil},
		{"defaults", runHead + "tracing:\n  exporter: stdout\n",
			&jobfile.Tracing{Exporter: "stdout", SampleRatio: 1, ServiceName: "shardjob"}},
		{"every key", runHead + "tracing:\n  exporter: otlp\n  endpoint: https://otel.internal:4318\n  headers: {X-Tenant: shop}\n  sampleRatio: 0.25\n  serviceName: orders-jobs\n",
			&jobfile.Tracing{Exporter: "otlp", Endpoint: "https://otel.internal:4318", Headers: map[string]string{"X-Tenant": "shop"},
				SampleRatio: 0.25, ServiceName: "orders-jobs"}},
		{"ratio 0 as an integer", runHead + "tracing: {exporter: otlp, sampleRatio: 0}\n",
			&jobfile.Tracing{Exporter: "otlp", SampleRatio: 0, ServiceName: "shardjob"}},
		{"first, with a comment", "# traced\ntracing:\n  exporter: stdout   # for now\n\n" + runHead,
			&jobfile.Tracing{Exporter: "stdout", SampleRatio: 1, ServiceName: "shardjob"}},
		{"between the sections", strings.Replace(runHead, "jobs:\n", "tracing:\n  exporter: stdout\njobs:\n", 1),
			&jobfile.Tracing{Exporter: "stdout", SampleRatio: 1, ServiceName: "shardjob"}},
	} {
		f, err := jobfile.Load(strings.NewReader(c.doc))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(f.Tracing, c.want) {
			t.Errorf("%s: tracing %+v, want %+v", c.name, f.Tracing, c.want)
		}
		if len(f.Jobs) != 1 || f.Jobs[0].Name != "report" || f.Regcenter.Namespace != "shop" {
			t.Errorf("%s: the rest of the file was not read: %+v", c.name, f)
		}
	}
}

func TestLoadRefusesBadTracing(t *testing.T) {
	for _, c := range []struct {
		name, tracing, want string
		kind                error
	}{
		{"unknown key", "tracing:\n  exporter: otlp\n  sampleRate: 0.5\n", `tracing.sampleRate at line 12: unknown key (did you mean "sampleRatio"?)`, jobfile.ErrInvalidTracing},
		{"no exporter", "tracing:\n  serviceName: x\n", "tracing.exporter at line 11: is required: otlp", jobfile.ErrInvalidTracing},
		{"unknown exporter", "tracing:\n  exporter: otel\n", `tracing.exporter at line 11: "otel" is not an exporter (did you mean "otlp"?)`, jobfile.ErrInvalidTracing},
		{"grpc exporter", "tracing:\n  exporter: jaeger\n", `"jaeger" is not an exporter: use otlp or stdout`, jobfile.ErrInvalidTracing},
		{"exporter not a string", "tracing:\n  exporter: [otlp]\n", "tracing.exporter at line 11: must be a string", jobfile.ErrInvalidTracing},
		{"endpoint without a scheme", "tracing:\n  exporter: otlp\n  endpoint: 127.0.0.1:4318\n", `tracing.endpoint at line 12: "127.0.0.1:4318" is not a URL such as http://127.0.0.1:4318`, jobfile.ErrInvalidTracing},
		{"grpc endpoint", "tracing:\n  exporter: otlp\n  endpoint: grpc://otel:4317\n", "must use http or https", jobfile.ErrInvalidTracing},
		{"endpoint with a password", "tracing:\n  exporter: otlp\n  endpoint: http://u:p@otel:4318\n", "must not hold credentials", jobfile.ErrInvalidTracing},
		{"endpoint with a query", "tracing:\n  exporter: otlp\n  endpoint: http://otel:4318/?x=1\n", "must have no query", jobfile.ErrInvalidTracing},
		{"headers a list", "tracing:\n  exporter: otlp\n  headers: [a]\n", "tracing.headers at line 12: must be a mapping of names to strings", jobfile.ErrInvalidTracing},
		{"header value a map", "tracing:\n  exporter: otlp\n  headers: {Authorization: {a: b}}\n", "tracing.headers.Authorization at line 12: must be a string", jobfile.ErrInvalidTracing},
		{"header name with a colon", "tracing:\n  exporter: otlp\n  headers: {\"Authorization:\": x}\n", `"Authorization:" is not a header name`, jobfile.ErrInvalidTracing},
		{"endpoint with stdout", "tracing:\n  exporter: stdout\n  endpoint: http://otel:4318\n", "tracing.endpoint at line 12: applies to exporter: otlp only", jobfile.ErrInvalidTracing},
		{"headers with stdout", "tracing:\n  exporter: stdout\n  headers: {a: b}\n", "tracing.headers at line 12: applies to exporter: otlp only", jobfile.ErrInvalidTracing},
		{"ratio above 1", "tracing:\n  exporter: otlp\n  sampleRatio: 1.5\n", "tracing.sampleRatio at line 12: 1.5 is out of range", jobfile.ErrInvalidTracing},
		{"ratio below 0", "tracing:\n  exporter: otlp\n  sampleRatio: -0.1\n", "-0.1 is out of range", jobfile.ErrInvalidTracing},
		{"ratio a word", "tracing:\n  exporter: otlp\n  sampleRatio: half\n", `tracing.sampleRatio at line 12: must be a number from 0 to 1, got "half"`, jobfile.ErrInvalidTracing},
		{"ratio NaN", "tracing:\n  exporter: otlp\n  sampleRatio: .nan\n", `must be a number from 0 to 1, got ".nan"`, jobfile.ErrInvalidTracing},
		{"ratio a percentage", "tracing:\n  exporter: otlp\n  sampleRatio: 50%\n", `got "50%"`, jobfile.ErrInvalidTracing},
		{"empty service name", "tracing:\n  exporter: otlp\n  serviceName: \" \"\n", "tracing.serviceName at line 12: must not be empty", jobfile.ErrInvalidTracing},
		{"section a string", "tracing: otlp\n", "tracing at line 10: must be a mapping", jobfile.ErrInvalidTracing},
		{"section empty", "tracing:\n", "tracing at line 10: must be a mapping", jobfile.ErrInvalidTracing},
		{"section repeated", "tracing: {exporter: otlp}\ntracing: {exporter: stdout}\n", `key "tracing" at line 11: repeats the key at line 10`, job.ErrInvalidConfig},
		{"near miss of the section", "tracng:\n  exporter: otlp\n", `top level: unknown key "tracng" at line 10 (did you mean "tracing"?)`, job.ErrUnknownKey},
	} {
		_, err := jobfile.Load(strings.NewReader(runHead + c.tracing))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one containing %q", c.name, err, c.want)
			continue
		}
		if !errors.Is(err, job.ErrInvalidConfig) || !errors.Is(err, c.kind) {
			t.Errorf("%s: %v does not match job.ErrInvalidConfig and %v", c.name, err, c.kind)
		}
		if strings.Count(err.Error(), "\n") != 0 {
			t.Errorf("%s: more than one problem reported: %v", c.name, err)
		}
	}
}

// The job package's problems with the rest of the file are reported
// beside the section's, each at its line.
func TestLoadReportsEveryProblemAtItsLine(t *testing.T) {
	doc := "regcenter:\n  servers: [127.0.0.1:2181]\n  namespace: shop\n" +
		"tracing:\n  exporter: otlp\n  sampleRatio: 2\n" +
		"jobs:\n  - name: report\n    cron: \"0 * * * * *\"\n    shardingTotalcount: 2\n"
	_, err := jobfile.Load(strings.NewReader(doc))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"2 problems:",
		`jobs[0] "report": unknown key "shardingTotalcount" at line 10 (did you mean "shardingTotalCount"?)`,
		"tracing.sampleRatio at line 6: 2 is out of range",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if !errors.Is(err, jobfile.ErrInvalidTracing) || !errors.Is(err, job.ErrUnknownKey) {
		t.Errorf("%v: errors.Is misses one of the problems", err)
	}

	// The top level may be written as one flow mapping, as any YAML.
	f, err := jobfile.Load(strings.NewReader(`{regcenter: {servers: ["127.0.0.1:2181"], namespace: shop}, tracing: {exporter: otlp}}`))
	if err != nil || f.Tracing == nil || f.Tracing.Exporter != jobfile.ExporterOTLP {
		t.Errorf("flow style: %+v %v", f, err)
	}
}

func TestLoadFileNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.yaml")
	if err := os.WriteFile(path, []byte(runHead+"tracing: {exporter: zipkin}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := jobfile.LoadFile(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+": tracing.exporter at line 10") {
		t.Fatalf("err %v, want it to start with the path and the problem", err)
	}
	if _, err := jobfile.LoadFile(filepath.Join(t.TempDir(), "none.yaml")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("a missing file: %v", err)
	}
}

// The provider of a stdout section prints the spans it is given, with
// the service name, when it is shut down at the latest.
func TestTracerProviderStdout(t *testing.T) {
	var out bytes.Buffer
	tr := &jobfile.Tracing{Exporter: jobfile.ExporterStdout, SampleRatio: 1, ServiceName: "orders-jobs"}
	tp, err := tr.NewTracerProvider(context.Background(), &out)
	if err != nil {
		t.Fatal(err)
	}
	_, span := tp.Tracer("test").Start(context.Background(), "probe")
	span.SetAttributes(attribute.String("k", "v"))
	span.End()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Name     string
		Resource []struct {
			Key   string
			Value struct{ Value any }
		}
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	service := ""
	for _, kv := range got.Resource {
		if kv.Key == "service.name" {
			service, _ = kv.Value.Value.(string)
		}
	}
	if got.Name != "probe" || service != "orders-jobs" {
		t.Fatalf("span %q of service %q, want probe of orders-jobs: %s", got.Name, service, out.String())
	}

	// Ratio 0: nothing is sampled, so nothing is printed.
	out.Reset()
	tr.SampleRatio = 0
	tp, err = tr.NewTracerProvider(context.Background(), &out)
	if err != nil {
		t.Fatal(err)
	}
	_, span = tp.Tracer("test").Start(context.Background(), "probe")
	span.End()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Fatalf("ratio 0 printed %s", out.String())
	}
}

// A Tracing built in Go, not loaded, is checked when its provider is made.
func TestTracerProviderRefusesBadSettings(t *testing.T) {
	for _, tr := range []jobfile.Tracing{
		{Exporter: "zipkin", SampleRatio: 1},
		{Exporter: jobfile.ExporterOTLP, Endpoint: "otel:4318", SampleRatio: 1},
		{Exporter: jobfile.ExporterStdout, SampleRatio: 2},
	} {
		if _, err := tr.NewTracerProvider(context.Background(), io.Discard); !errors.Is(err, jobfile.ErrInvalidTracing) {
			t.Errorf("%+v: err %v, want ErrInvalidTracing", tr, err)
		}
	}
}

// example/yaml/tracing.yaml loads, with its tracing section.
func TestTracingExampleLoads(t *testing.T) {
	f, err := jobfile.LoadFile(filepath.Join("..", "example", "yaml", "tracing.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Tracing == nil || f.Tracing.Exporter != jobfile.ExporterOTLP || f.Tracing.Endpoint == "" {
		t.Fatalf("tracing %+v, want an otlp section with an endpoint", f.Tracing)
	}
	if err := jobfile.Check(f.Jobs); err != nil {
		t.Fatal(err)
	}
}
