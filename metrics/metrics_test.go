package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/shardjob/shardjob/internal/testing/leakcheck"
	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobhttp"
	"github.com/shardjob/shardjob/metrics"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

var zk *zktest.Cluster

func TestMain(m *testing.M) { os.Exit(zktest.RunTests(leakcheck.Checked(m), &zk)) }

// node is one instance of the test cluster: its own ZooKeeper session,
// scheduler, metrics and HTTP endpoint.
type node struct {
	id    string
	rc    *zookeeper.Center
	sched *job.Scheduler
	srv   *httptest.Server
}

func startNode(t *testing.T, ns, id string, jobs map[string]job.Config, run func(id string) job.Job, opts ...job.Option) *node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log := testlog.Logger(t).With("instance", id)
	rc, err := zookeeper.Open(ctx, regcenter.Config{Servers: zk.Servers(), Namespace: ns, SessionTimeout: 4 * time.Second}, regcenter.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	m, err := metrics.New(metrics.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	opts = append(append([]job.Option{job.WithServerID(id), job.WithLogger(log)}, m.SchedulerOptions()...), opts...)
	s, err := job.NewScheduler(rc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Watch(s); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range jobs {
		if err := s.Add(ctx, cfg, run(id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	n := &node{id: id, rc: rc, sched: s, srv: httptest.NewServer(jobhttp.NewHandler(rc, jobhttp.Options{Metrics: m.Handler(), Logger: log}))}
	t.Cleanup(func() { n.stop(t) })
	return n
}

func (n *node) stop(t *testing.T) {
	n.srv.Close()
	if n.sched == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.sched.Shutdown(ctx); err != nil {
		t.Errorf("shutdown %s: %v", n.id, err)
	}
	n.rc.Close()
	n.sched = nil
}

// crash ends the node's session at once, as a killed process's ends once
// ZooKeeper notices, with no graceful leave.
func (n *node) crash() {
	n.rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = n.sched.Shutdown(ctx) // its ZooKeeper calls fail: the center is closed
	n.sched = nil
}

// scrape fetches the node's /metrics over HTTP and parses it with the
// Prometheus text parser.
func (n *node) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	return scrapeURL(t, n.srv.URL+"/metrics")
}

// value sums the samples of family name whose labels include want (a
// histogram's sample count for histograms).
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	sum := 0.0
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

func l(kv ...string) map[string]string {
	out := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// eventually scrapes every node until cond holds for the sums, or fails
// the test with what was last seen.
func eventually(t *testing.T, within time.Duration, what string, nodes []*node, cond func(sum func(name string, labels map[string]string) float64) bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		all := make([]map[string]*dto.MetricFamily, len(nodes))
		for i, n := range nodes {
			all[i] = n.scrape(t)
		}
		sum := func(name string, labels map[string]string) float64 {
			s := 0.0
			for _, f := range all {
				s += value(f, name, labels)
			}
			return s
		}
		if cond(sum) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not seen within %v", what, within)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestClusterMetrics runs a real two-instance cluster with jobs that
// succeed, fail, time out and hang, crashes the instance holding the
// hanging items so that the other takes them over, and reads what each
// instance exports over HTTP.
func TestClusterMetrics(t *testing.T) {
	ns := fmt.Sprintf("m%d-%d", os.Getpid(), time.Now().UnixNano())
	jobs := map[string]job.Config{
		"ok":   {Name: "ok", Cron: "* * * * * *", ShardingTotalCount: 2},
		"bad":  {Name: "bad", Cron: "* * * * * *", ShardingTotalCount: 2},
		"late": {Name: "late", Cron: "* * * * * *", ShardingTotalCount: 1, Timeout: 50 * time.Millisecond},
		"hang": {Name: "hang", Cron: "* * * * * *", ShardingTotalCount: 2, Failover: true},
	}
	var crashing atomic.Bool
	run := func(id string) job.Job {
		return job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
			switch sc.JobName {
			case "bad":
				if sc.Item == 1 {
					return errors.New("item 1 always fails")
				}
			case "late":
				<-ctx.Done() // runs past its 50 ms timeout
				return ctx.Err()
			case "hang":
				if id == "a" && sc.Kind == job.KindFire && !crashing.Load() {
					<-ctx.Done() // still running when a crashes
					return ctx.Err()
				}
			}
			return nil
		})
	}
	a := startNode(t, ns, "a", jobs, run)
	b := startNode(t, ns, "b", jobs, run, job.WithAlarmThreshold(5))
	both := []*node{a, b}

	eventually(t, 30*time.Second, "fires, successes, failures, timeouts and misfires", both, func(sum func(string, map[string]string) float64) bool {
		return sum("shardjob_fires_total", l("job", "ok", "kind", "fire")) >= 4 &&
			sum("shardjob_executions_total", l("job", "ok", "kind", "fire", "result", "success")) >= 4 &&
			sum("shardjob_executions_total", l("job", "bad", "result", "failure")) >= 1 &&
			sum("shardjob_executions_total", l("job", "bad", "result", "success")) >= 1 &&
			sum("shardjob_executions_total", l("job", "late", "result", "timeout")) >= 1 &&
			sum("shardjob_misfires_owed_total", l("job", "hang")) >= 1
	})

	fa, fb := a.scrape(t), b.scrape(t)
	for _, f := range []map[string]*dto.MetricFamily{fa, fb} {
		if got := value(f, "shardjob_registry_connected", l("backend", "zookeeper")); got != 1 {
			t.Errorf("shardjob_registry_connected{backend=zookeeper} = %v, want 1", got)
		}
		if got := value(f, "shardjob_registry_requests_total", l("backend", "zookeeper", "kind", "multi")); got < 1 {
			t.Errorf("registry multi requests = %v, want some", got)
		}
		if got := value(f, "shardjob_registry_errors_total", l("backend", "zookeeper")); got != 0 {
			t.Errorf("registry errors = %v on a healthy cluster", got)
		}
		// The names before the rename, kept on ZooKeeper for existing dashboards.
		if got := value(f, "shardjob_zookeeper_connected", nil); got != 1 {
			t.Errorf("shardjob_zookeeper_connected = %v, want 1", got)
		}
		if got := value(f, "shardjob_zookeeper_requests_total", l("kind", "multi")); got < 1 {
			t.Errorf("multi requests = %v, want some", got)
		}
		if got := value(f, "shardjob_zookeeper_errors_total", nil); got != 0 {
			t.Errorf("zookeeper errors = %v on a healthy cluster", got)
		}
		if f["shardjob_fire_delay_seconds"].GetType() != dto.MetricType_HISTOGRAM || f["shardjob_execution_duration_seconds"].GetType() != dto.MetricType_HISTOGRAM {
			t.Errorf("fire delay and execution duration are not histograms")
		}
		if got := value(f, "go_goroutines", nil); got < 1 {
			t.Errorf("the default registry lacks the Go collector")
		}
	}
	for _, name := range []string{"ok", "bad", "late", "hang"} {
		if got := value(fa, "shardjob_leader", l("job", name)) + value(fb, "shardjob_leader", l("job", name)); got != 1 {
			t.Errorf("job %s: %v leaders exported, want 1", name, got)
		}
		if got := value(fa, "shardjob_reshards_total", l("job", name)) + value(fb, "shardjob_reshards_total", l("job", name)); got < 1 {
			t.Errorf("job %s: no reshard counted", name)
		}
	}
	if got := value(fa, "shardjob_units", nil) + value(fb, "shardjob_units", nil); got != 7 {
		t.Errorf("units held = %v, want the 7 items of the 4 jobs", got)
	}
	if got := value(fa, "shardjob_fire_delay_seconds", l("job", "ok", "kind", "fire")); got < 1 {
		t.Errorf("no fire delay observed on a")
	}
	if got := value(fb, "shardjob_alarm", nil); got != 0 {
		t.Errorf("b alarmed before holding everything")
	}
	// Labels are bounded: job, kind, result, the registry's backend, and
	// the Go collector's own.
	allowed := map[string]bool{"job": true, "kind": true, "result": true, "backend": true, "le": true, "quantile": true, "version": true}
	for name, f := range fa {
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				if !allowed[lp.GetName()] {
					t.Errorf("%s has label %q", name, lp.GetName())
				}
			}
		}
	}

	// a hangs on its "hang" items; crash it: b claims them from the
	// failover queue and runs them as failover runs.
	crashing.Store(true)
	a.crash()
	b1 := []*node{b}
	eventually(t, 30*time.Second, "failover claims and failover runs on b", b1, func(sum func(string, map[string]string) float64) bool {
		return sum("shardjob_failover_claims_total", l("job", "hang")) >= 1 &&
			sum("shardjob_executions_total", l("job", "hang", "kind", "failover", "result", "success")) >= 1 &&
			sum("shardjob_fires_total", l("job", "hang", "kind", "failover")) >= 1
	})
	eventually(t, 30*time.Second, "b holding every unit, alarmed and leading every job", b1, func(sum func(string, map[string]string) float64) bool {
		return sum("shardjob_units", nil) == 7 && sum("shardjob_alarm", nil) == 1 && sum("shardjob_alarms_total", nil) >= 1 &&
			sum("shardjob_leader", nil) == 4
	})

	// A drain shows at once on the instance drained.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := job.Drain(ctx, b.rc, "b"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "b draining", b1, func(sum func(string, map[string]string) float64) bool {
		return sum("shardjob_draining", nil) == 1
	})
	if err := job.Undrain(ctx, b.rc, "b"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "b undrained", b1, func(sum func(string, map[string]string) float64) bool {
		return sum("shardjob_draining", nil) == 0
	})
}

func TestNewRefusesBadOptions(t *testing.T) {
	for name, o := range map[string]metrics.Options{
		"empty delay buckets": {DelayBuckets: []float64{}},
		"decreasing buckets":  {DurationBuckets: []float64{1, 0.5}},
		"repeated bucket":     {DelayBuckets: []float64{0.1, 0.1}},
		"nan bucket":          {DelayBuckets: []float64{0.1, nan()}},
	} {
		if _, err := metrics.New(o); !errors.Is(err, metrics.ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
	reg := prometheus.NewRegistry()
	if _, err := metrics.New(metrics.Options{Registerer: reg, Gatherer: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := metrics.New(metrics.Options{Registerer: reg, Gatherer: reg}); err == nil {
		t.Error("a second Metrics on the same registry was accepted")
	}
	m, err := metrics.New(metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Watch(nil); !errors.Is(err, metrics.ErrInvalid) {
		t.Errorf("Watch(nil) = %v, want ErrInvalid", err)
	}
	// Without a gatherer the handler says why instead of serving nothing.
	noGather, err := metrics.New(metrics.Options{Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	noGather.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "Gatherer") {
		t.Errorf("handler without a gatherer: %d %q", rec.Code, rec.Body.String())
	}
}

func nan() float64 {
	var z float64
	return z / z
}

func TestResult(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, metrics.ResultSuccess},
		{errors.New("boom"), metrics.ResultFailure},
		{fmt.Errorf("item 3: %w", job.ErrExecutionTimeout), metrics.ResultTimeout},
		{context.DeadlineExceeded, metrics.ResultTimeout},
		{context.Canceled, metrics.ResultFailure},
	} {
		if got := metrics.Result(c.err); got != c.want {
			t.Errorf("Result(%v) = %s, want %s", c.err, got, c.want)
		}
	}
}
