package job_test

import (
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
)

// The promise ElasticJob keeps, with the defaults: a crash makes run
// again only what was in flight — the run going at the crash, or one
// whose completion was being written — never a fire whose completion had
// been recorded. Instance a runs a one-second job, b waits beside it; a
// is killed (its session closed, nothing written after) between runs: b
// takes the item and runs again at most the last fire a ran (its
// completion may have been in flight), none before it, and loses none.
// It runs on either registry (make test-etcd).
func TestClusterACrashWithDefaultsRunsNoCompletedFireAgain(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfg := everySecond("promise", 1)
	cfg.Failover = true
	start := time.Now()
	a := startInstance(t, ns, "a", cfg, rec)
	rec.waitFires(t, start, 2, 1, 30*time.Second)
	startInstance(t, ns, "b", cfg, rec)
	// Four fires of a's after b joined, then the crash, right after a run.
	for {
		rec.waitFires(t, time.Now(), 1, 1, 30*time.Second)
		n := 0
		for _, r := range rec.snapshot() {
			if r.server == "a" && r.begin.After(start) {
				n++
			}
		}
		if n >= 6 {
			break
		}
	}
	crashed := time.Now()
	a.crash(t)
	waitUntil(t, 30*time.Second, func() bool {
		for _, r := range rec.snapshot() {
			if r.server == "b" && r.begin.After(crashed) {
				return true
			}
		}
		return false
	})
	end := rec.waitFires(t, time.Now(), 2, 1, 30*time.Second)[1]
	recs := rec.snapshot()
	checkEveryFire(t, recs, start.Add(time.Second), end, 1)

	var ranOnA []time.Time
	for _, r := range recs {
		if r.server == "a" {
			ranOnA = append(ranOnA, r.fire)
		}
	}
	if len(ranOnA) == 0 {
		t.Fatal("a ran nothing")
	}
	last := ranOnA[len(ranOnA)-1]
	for _, f := range ranOnA[:len(ranOnA)-1] {
		for _, r := range recs {
			if r.server == "b" && r.begin.After(crashed) && standsFor(r, f) {
				t.Errorf("b ran fire %s again (as %s, fires %s–%s) after a's crash: a had completed it before its last run %s",
					f.Format("15:04:05"), r.kind, r.fire.Format("15:04:05"), r.through.Format("15:04:05"), last.Format("15:04:05"))
			}
		}
	}
	for _, r := range recs {
		if r.server == "b" && r.kind != job.KindFire {
			t.Logf("b made up fires %s–%s (%s)", r.fire.Format("15:04:05"), r.through.Format("15:04:05"), r.kind)
		}
	}
}
