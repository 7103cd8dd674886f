package job

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter/zktest"
)

// BenchmarkFire measures one instance's fire path against a real
// ZooKeeper: read the assignment, mark items running in one transaction,
// run them (a no-op job), mark them completed in group commits. It reports
// the requests each fire sends and the items dispatched per second.
func BenchmarkFire(b *testing.B) {
	zc := zktest.Start(b)
	for _, items := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("items=%d", items), func(b *testing.B) {
			// A schedule that never fires during the benchmark: fires are
			// driven directly.
			cfg := Config{Name: fmt.Sprintf("fire%d", items), Cron: "0 0 0 1 1 *", ShardingTotalCount: items}
			_, r, rc := startOneJob(b, zc, fmt.Sprintf("bench%d", items), cfg)
			// A job that fires once a year joins its election ahead of a
			// fire (prepare); driven directly, it joins now.
			if err := r.prepareSync(); err != nil {
				b.Fatal(err)
			}
			sess := rc.Session()
			r.fireAssigned(sess, time.UnixMilli(1), KindFire, nil) // the first fire reshards
			before := rc.Stats()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r.fireAssigned(sess, time.UnixMilli(int64(i+2)), KindFire, nil)
			}
			b.StopTimer()
			d := rc.Stats().Sub(before)
			b.ReportMetric(float64(d.Total())/float64(b.N), "requests/fire")
			b.ReportMetric(float64(items*b.N)/b.Elapsed().Seconds(), "items/s")
		})
	}
}

// BenchmarkFireUnmonitored measures what an unmonitored one-item job's
// scheduled fire costs this process in the steady state, where it sends no
// request: from the trigger's dispatch through the run (a no-op job) to its
// completion, fires due in the past so that nothing waits for a time. It
// reports the process's CPU time per fire (cpu-µs/fire), the registry's
// client included.
func BenchmarkFireUnmonitored(b *testing.B) {
	cfg := Config{Name: "unmon", Cron: "0 0 0 1 1 *", ShardingTotalCount: 1, Unmonitored: true}
	_, r, rc := startOneJob(b, zktest.Start(b), "benchunmon", cfg)
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	fire := func(i int) {
		r.goFire(base.Add(time.Duration(i) * time.Millisecond))
		r.book.WaitFiring(context.Background())
	}
	for i := range 3 { // the first fires reshard and arm the watches
		fire(i)
		time.Sleep(100 * time.Millisecond)
	}
	before, cpu := rc.Stats(), processCPU(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fire(i + 3)
	}
	b.StopTimer()
	b.ReportMetric(float64(rc.Stats().Sub(before).Total())/float64(b.N), "requests/fire")
	b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/float64(b.N), "cpu-µs/fire")
}

// BenchmarkFireMonitored is BenchmarkFireUnmonitored for a monitored
// one-item job: its scheduled fire in the steady state, from the trigger's
// dispatch through the held mark's check, the run (a no-op job) and the
// completion, whose record goes to the completion journal. Fires go one at
// a time, so each completion waits for the journal's window and leads its
// own write of it (one request a fire, where fires together share one):
// ns/op is mostly that wait; cpu-µs/fire is what the process spent.
func BenchmarkFireMonitored(b *testing.B) {
	cfg := Config{Name: "mon", Cron: "0 0 0 1 1 *", ShardingTotalCount: 1}
	_, r, rc := startOneJob(b, zktest.Start(b), "benchmon", cfg)
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	fire := func(i int) {
		r.goFire(base.Add(time.Duration(i) * time.Millisecond))
		r.book.WaitFiring(context.Background())
	}
	for i := range 3 { // the first fires reshard and arm the watches
		fire(i)
		time.Sleep(100 * time.Millisecond)
	}
	before, cpu := rc.Stats(), processCPU(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fire(i + 3)
	}
	b.StopTimer()
	b.ReportMetric(float64(rc.Stats().Sub(before).Total())/float64(b.N), "requests/fire")
	b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/float64(b.N), "cpu-µs/fire")
}

// processCPU is the CPU time this process has spent, user and system.
func processCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
