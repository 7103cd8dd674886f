package job

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

// startOneJob starts a scheduler with the single job cfg (a no-op) on
// namespace ns of zc, stopped when tb ends, and returns it with the job's
// runner and its ZooKeeper session.
func startOneJob(tb testing.TB, zc *zktest.Cluster, ns string, cfg Config, opts ...Option) (*Scheduler, *runner, *zookeeper.Center) {
	tb.Helper()
	noop := SimpleFunc(func(context.Context, ShardingContext) error { return nil })
	return startOneJobWith(tb, zc, ns, cfg, noop, opts...)
}

// startOneJobWith is startOneJob with j as the job.
func startOneJobWith(tb testing.TB, zc *zktest.Cluster, ns string, cfg Config, j Job, opts ...Option) (*Scheduler, *runner, *zookeeper.Center) {
	tb.Helper()
	return startOneJobOn(tb, regcenter.Config{Servers: zc.Servers(), Namespace: ns}, cfg, j, opts...)
}

// startOneJobOn is startOneJobWith on a ZooKeeper session of rcfg.
func startOneJobOn(tb testing.TB, rcfg regcenter.Config, cfg Config, j Job, opts ...Option) (*Scheduler, *runner, *zookeeper.Center) {
	tb.Helper()
	rc := connectOne(tb, rcfg)
	s, r := runOneJob(tb, rc, cfg, j, opts...)
	return s, r, rc
}

// connectOne opens a ZooKeeper session of rcfg, closed when tb ends.
func connectOne(tb testing.TB, rcfg regcenter.Config) *zookeeper.Center {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rc, err := zookeeper.Open(ctx, rcfg, regcenter.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := rc.Close(); err != nil {
			tb.Errorf("closing the session: %v", err)
		}
	})
	return rc
}

// runOneJob starts a scheduler on rc with the single job cfg, run by j,
// stopped when tb ends, and returns it with the job's runner.
func runOneJob(tb testing.TB, rc regcenter.Center, cfg Config, j Job, opts ...Option) (*Scheduler, *runner) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts = append([]Option{WithServerID("one"), WithLogger(slog.New(slog.DiscardHandler))}, opts...)
	s, err := NewScheduler(rc, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.Add(ctx, cfg, j); err != nil {
		tb.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Shutdown(context.Background()); err != nil {
			tb.Errorf("shutdown: %v", err)
		}
	})
	return s, s.runner(cfg.Name)
}
