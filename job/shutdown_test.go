package job_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// Shutdown keeps its deadline whatever the registry does: with every
// byte to and from the registry dropped while an item runs (a job that
// honours its context), Shutdown(ctx) returns within ctx's deadline and a
// second, and its error names what waited on the registry, not the job.
// It runs on every registry (make test-etcd, make test-job-pg).
func TestClusterShutdownKeepsItsDeadlineWithTheRegistryGone(t *testing.T) {
	ns := namespace(t)
	proxy := registryProxy(t)
	cfg := viaProxy(t, proxy, regcenter.Config{Namespace: ns, SessionTimeout: 4 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, err := regcenter.Open(ctx, cfg, regcenter.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	s, err := job.NewScheduler(rc, job.WithServerID("gone"), job.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	running := make(chan struct{}, 4)
	err = s.Add(ctx, job.Config{Name: "j", Cron: "* * * * * *", ShardingTotalCount: 2, Failover: true},
		job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
			select {
			case running <- struct{}{}:
			default:
			}
			<-ctx.Done() // honours its context
			return ctx.Err()
		}))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-running:
	case <-ctx.Done():
		t.Fatal("no item ran within 30 s")
	}

	proxy.Block()
	const deadline = 3 * time.Second
	sctx, scancel := context.WithTimeout(context.Background(), deadline)
	defer scancel()
	begin := time.Now()
	err = s.Shutdown(sctx)
	took := time.Since(begin)
	t.Logf("Shutdown took %v: %v", took, err)
	if took > deadline+time.Second {
		t.Errorf("Shutdown took %v with a deadline of %v", took, deadline)
	}
	if err == nil {
		t.Fatal("Shutdown with the registry gone reported nothing left undone")
	}
	if strings.Contains(err.Error(), "ignore their context") {
		t.Errorf("Shutdown blames the job, which honoured its context: %v", err)
	}
	proxy.Unblock()
}
