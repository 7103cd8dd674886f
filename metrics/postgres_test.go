package metrics_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/testing/pgtest"
	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobhttp"
	"github.com/shardjob/shardjob/metrics"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/postgres"
)

// The registry's figures are labelled by backend on PostgreSQL too: a
// scheduler whose job fires shows itself connected, and its marking and
// completion requests, under backend="postgres".
func TestRegistryMetricsByBackendOnPostgres(t *testing.T) {
	srv := pgtest.StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := testlog.Logger(t)
	rc, err := postgres.Open(ctx, regcenter.Config{URL: srv.DSN, Namespace: "metrics", SessionTimeout: 4 * time.Second}, regcenter.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	m, err := metrics.New(metrics.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	s, err := job.NewScheduler(rc, append([]job.Option{job.WithServerID("pg"), job.WithLogger(log)}, m.SchedulerOptions()...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Watch(s); err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{}, 8)
	noop := job.SimpleFunc(func(context.Context, job.ShardingContext) error {
		select {
		case ran <- struct{}{}:
		default:
		}
		return nil
	})
	if err := s.Add(ctx, job.Config{Name: "pg", Cron: "* * * * * *", ShardingTotalCount: 2}, noop); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(jobhttp.NewHandler(rc, jobhttp.Options{Metrics: m.Handler(), Logger: log}))
	t.Cleanup(func() {
		web.Close()
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer scancel()
		if err := s.Shutdown(sctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := rc.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	for range 2 { // two runs: the first fire's marks and a completion are written
		select {
		case <-ran:
		case <-ctx.Done():
			t.Fatal("the job did not run")
		}
	}
	f := scrapeURL(t, web.URL+"/metrics")
	if got := value(f, "shardjob_registry_connected", l("backend", "postgres")); got != 1 {
		t.Errorf("shardjob_registry_connected{backend=postgres} = %v, want 1", got)
	}
	if got := value(f, "shardjob_registry_requests_total", l("backend", "postgres", "kind", "multi")); got < 1 {
		t.Errorf("shardjob_registry_requests_total{backend=postgres,kind=multi} = %v, want some", got)
	}
	if got := value(f, "shardjob_registry_connected", l("backend", "zookeeper")); got != 0 {
		t.Errorf("a PostgreSQL scheduler reports a ZooKeeper connection: %v", got)
	}
}
