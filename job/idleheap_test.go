package job

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

// BenchmarkIdleJobHeap measures what an idle job costs the heap (issue 44
// asks for at most 5,000 bytes): idleHeapJobs one-item jobs that fire
// once a year, registered by one scheduler on a real ZooKeeper; the heap
// in use after a collection once the registration's requests have
// stopped, less what it was before the scheduler was made, per job, is
// reported as bytes/job. firebench -register measures the same at 10,000
// jobs, in a process of its own. A benchmark rather than a test: the
// figure moves with the Go runtime and the registry client, and whatever
// else the process runs. Once is enough:
//
//	go test -run '^$' -bench IdleJobHeap -benchtime 1x ./job/
func BenchmarkIdleJobHeap(b *testing.B) {
	zc := zktest.Start(b)
	var total float64
	for i := range b.N {
		rc := connectOne(b, regcenter.Config{Servers: zc.Servers(), Namespace: fmt.Sprintf("idleheap%d", i)})
		total += idleJobHeap(b, rc, idleHeapJobs)
	}
	b.ReportMetric(total/float64(b.N), "bytes/job")
	b.ReportMetric(0, "ns/op") // the time is the registration's, not what is measured
}

// idleHeapJobs is how many jobs BenchmarkIdleJobHeap registers: enough
// that the scheduler's own heap is a few bytes a job.
const idleHeapJobs = 2000

// idleJobHeap registers n idle jobs on rc in a scheduler of their own and
// returns the heap in use per job once they are registered and quiet
// (see BenchmarkIdleJobHeap); the scheduler is shut down before it
// returns.
func idleJobHeap(tb testing.TB, rc *zookeeper.Center, n int) float64 {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	before := heapInUse()
	s, err := NewScheduler(rc, WithServerID("idle"), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		tb.Fatal(err)
	}
	defer func() {
		if err := s.Shutdown(ctx); err != nil {
			tb.Errorf("shutdown: %v", err)
		}
	}()
	noop := SimpleFunc(func(context.Context, ShardingContext) error { return nil })
	for i := range n {
		// Midnight on 1 January: never during the measurement.
		cfg := Config{Name: fmt.Sprintf("idle%05d", i), Cron: "0 0 0 1 1 *", ShardingTotalCount: 1}
		if err := s.Add(ctx, cfg, noop); err != nil {
			tb.Fatal(err)
		}
	}
	if err := s.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	// Quiet: a slice of 300 ms without a request (the session's pings are
	// none), within ten seconds.
	for prev, end := rc.Stats(), time.Now().Add(10*time.Second); time.Now().Before(end); {
		time.Sleep(300 * time.Millisecond)
		cur := rc.Stats()
		if cur.Sub(prev).Total() == 0 {
			break
		}
		prev = cur
	}
	after := heapInUse()
	runtime.KeepAlive(s)
	return (float64(after) - float64(before)) / float64(n)
}

// heapInUse returns the heap in use after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestIdleJobMakesNoActiveParts: a registered job whose next fire is far
// off and that has failover off never prepared, fired, led or claimed,
// and holds none of the parts that only those need (active.go); asking
// whether it leads, or for its next fire's quick dispatch, makes none.
// Its first fire makes them, and they stay.
func TestIdleJobMakesNoActiveParts(t *testing.T) {
	cfg := Config{Name: "idle", Cron: "0 0 0 1 1 *", ShardingTotalCount: 1}
	s, r, rc := startOneJob(t, zktest.Start(t), "idleparts", cfg)
	if r.leading() || r.quickFire() || s.Stats().Jobs[0].Leader {
		t.Fatal("an idle job reports leading, or a quick fire")
	}
	if r.activeIfMade() != nil {
		t.Fatal("registering an idle job made its active parts")
	}
	if err := r.prepareSync(); err != nil {
		t.Fatal(err)
	}
	a := r.activeIfMade()
	if a == nil {
		t.Fatal("preparing (joining the election) made no active parts")
	}
	r.fireAssigned(rc.Session(), time.UnixMilli(1), KindFire, nil)
	if r.active() != a {
		t.Fatal("a fire made the active parts again")
	}
}
