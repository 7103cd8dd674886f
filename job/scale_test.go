package job_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// TestManyJobsCostNoGoroutinesPerJob registers many jobs on one scheduler
// and counts goroutines: a job at rest holds none (DESIGN.md §6).
func TestManyJobsCostNoGoroutinesPerJob(t *testing.T) {
	if testing.Short() {
		t.Skip("registers a thousand jobs")
	}
	const jobs = 1000
	ns := namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rc, err := regcenter.Open(ctx, onRegistry(regcenter.Config{Namespace: ns}), regcenter.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	base := runtime.NumGoroutine()
	s, err := job.NewScheduler(rc, job.WithServerID("many"), job.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	noop := job.SimpleFunc(func(context.Context, job.ShardingContext) error { return nil })
	for i := 0; i < jobs; i++ {
		// Fires once a year: the test measures jobs at rest.
		cfg := job.Config{Name: fmt.Sprintf("j%04d", i), Cron: "0 0 0 1 1 *", ShardingTotalCount: 4}
		if err := s.Add(ctx, cfg, noop); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	before := rc.Stats()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	reg := rc.Stats().Sub(before)
	// Let elections and leader duties settle.
	var n int
	deadline := time.Now().Add(time.Minute)
	for {
		n = runtime.NumGoroutine() - base
		if n < 50 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("%d jobs: started in %v with %.1f requests per job; %d goroutines above the baseline at rest",
		jobs, time.Since(start).Round(time.Millisecond), float64(reg.Total())/jobs, n)
	if n >= 50 {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines for %d jobs at rest; a job must hold none:\n%s", n, jobs, buf[:runtime.Stack(buf, true)])
	}
	sctx, scancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer scancel()
	if err := s.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
}
