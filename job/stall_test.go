package job_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
)

// A process that could not run for a while (a stall: a machine paused, a
// long collection) finds several fires due at once; the trigger collapses
// them into the latest. The fires before it were never dispatched, and
// are made up with it, as fires skipped while disconnected are: none is
// lost. The stall is the scheduler's clock jumping 3.5 s ahead between two
// fires (the trigger's timer is on real time, so it wakes to find three
// fires past).
func TestClusterFiresCollapsedByAStallAreMadeUp(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	var offset atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	cfg := everySecond("stall", 1)
	start := clock()
	startInstance(t, ns, "s1", cfg, rec, job.WithClockForTest(clock))
	rec.waitFires(t, start, 2, 1, 30*time.Second)
	// Just after a fire, so that the jump lands between two.
	rec.waitFires(t, clock(), 1, 1, 30*time.Second)
	offset.Store(int64(3500 * time.Millisecond))
	jumped := clock()
	end := rec.waitFires(t, jumped, 2, 1, 30*time.Second)[1]
	recs := rec.snapshot()
	checkEveryFire(t, recs, start.Add(time.Second), end, 1)
	for _, r := range recs {
		if r.kind != job.KindFire {
			t.Logf("made up fires %s–%s (%s)", r.fire.Format("15:04:05.000"), r.through.Format("15:04:05.000"), r.kind)
		}
	}
}
