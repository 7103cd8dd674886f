package dispatchmetrics_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/shardjob/shardjob/dispatch"
	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/metrics"
	"github.com/shardjob/shardjob/metrics/dispatchmetrics"
	"github.com/shardjob/shardjob/metrics/internal/scrapetest"
)

// A dispatcher on SQLite with a worker's tasks in every state but running:
// the scrape shows them by worker and state, due and capped, and still
// answers (counting the failure) once the database is gone.
func TestDispatcherMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := dispatch.Open(ctx, dispatch.Config{DSN: filepath.Join(t.TempDir(), "dispatch.db"), Logger: testlog.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = d.Close(context.Background())
		}
	})
	if err := d.PutWorker(ctx, dispatch.Worker{Name: "acme", MaxRunning: 2}); err != nil {
		t.Fatal(err)
	}
	if err := d.PutWorker(ctx, dispatch.Worker{Name: "idle", MaxRunning: 5}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	due, err := d.Assign(ctx, dispatch.Assignment{Worker: "acme", Start: now.Add(-time.Minute), End: now.Add(time.Hour),
		Tasks: []dispatch.NewTask{{ExternalID: "a"}, {ExternalID: "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Assign(ctx, dispatch.Assignment{Worker: "acme", Start: now.Add(time.Hour), End: now.Add(2 * time.Hour),
		Tasks: []dispatch.NewTask{{ExternalID: "c"}, {ExternalID: "d"}, {ExternalID: "e"}}}); err != nil {
		t.Fatal(err)
	}
	if err := d.Cancel(ctx, due[1].UUID); err != nil {
		t.Fatal(err)
	}
	m, err := metrics.New(metrics.Options{Logger: testlog.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := dispatchmetrics.Watch(m, nil); !errors.Is(err, metrics.ErrInvalid) {
		t.Errorf("Watch(m, nil) = %v, want ErrInvalid", err)
	}
	if err := dispatchmetrics.Watch(m, d); err != nil {
		t.Fatal(err)
	}
	if err := dispatchmetrics.Watch(m, d); !errors.Is(err, metrics.ErrInvalid) {
		t.Errorf("a second Watch: %v, want ErrInvalid", err)
	}
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()

	f := scrapetest.Scrape(t, srv.URL)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"shardjob_dispatch_tasks", l("worker", "acme", "state", "waiting"), 4},
		{"shardjob_dispatch_tasks", l("worker", "acme", "state", "cancelled"), 1},
		{"shardjob_dispatch_tasks", l("worker", "acme", "state", "running"), 0},
		{"shardjob_dispatch_tasks", l("worker", "idle", "state", "waiting"), 0},
		{"shardjob_dispatch_tasks_due", l("worker", "acme"), 1},
		{"shardjob_dispatch_max_running", l("worker", "acme"), 2},
		{"shardjob_dispatch_running", l("worker", "acme"), 0},
		{"shardjob_dispatch_tasks_late", l("worker", "acme"), 0},
		{"shardjob_dispatch_node_events_total", l("event", "started"), 0},
		{"shardjob_dispatch_queue_read_errors_total", nil, 0},
	} {
		if got := scrapetest.Value(f, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if n := len(f["shardjob_dispatch_tasks"].GetMetric()); n != 10 {
		t.Errorf("%d task series, want 5 states × 2 workers", n)
	}

	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	closed = true
	f = scrapetest.Scrape(t, srv.URL)
	if got := scrapetest.Value(f, "shardjob_dispatch_queue_read_errors_total", nil); got != 1 {
		t.Errorf("queue read errors after the database closed = %v, want 1", got)
	}
	if _, ok := f["shardjob_dispatch_node_events_total"]; !ok {
		t.Error("the node's counters went with the queues")
	}
}

func l(kv ...string) map[string]string {
	out := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}
