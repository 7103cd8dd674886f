package job_test

import (
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// TestGainedItemsRunTheFireTheyPassedIdle: the instance holding a job's
// only item dies; the leader (alive) reshards at the next fire, and the
// item goes to an instance that has let that very fire pass as idle. It
// runs the fire at once, a make-up run standing for it, instead of a
// whole period later; and the fire runs once.
func TestGainedItemsRunTheFireTheyPassedIdle(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	const period = 4 * time.Second
	cfg := job.Config{Name: "cu", Cron: "*/4 * * * * *", ShardingTotalCount: 1}
	startInstance(t, ns, "s1", cfg, rec) // the leader throughout
	s2 := startInstance(t, ns, "s2", cfg, rec)
	ran := func(server string, after time.Time) bool {
		for _, r := range rec.snapshot() {
			if r.server == server && r.fire.After(after) {
				return true
			}
		}
		return false
	}
	waitUntil(t, 20*time.Second, func() bool { return ran("s1", time.Time{}) })
	// Move the item to s2 by disabling s1 for the job: s1 stays the
	// leader and takes no items, so the item's next owner is s3.
	obs := observer(t, ns)
	if _, err := obs.Create(tctx(t), "/cu/servers/s1/disabled", nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, func() bool { return ran("s2", time.Time{}) })
	joined := time.Now()
	startInstance(t, ns, "s3", cfg, rec)
	// Crash s2 right after one of its fires, once s3 has let two fires
	// pass as an idle instance: the next fire is the first the item
	// misses.
	var last time.Time
	waitUntil(t, 30*time.Second, func() bool {
		recs := rec.snapshot()
		r := recs[len(recs)-1]
		last = r.fire
		return r.server == "s2" && r.fire.After(joined.Add(period)) && time.Since(r.fire) < period/2
	})
	s2.crash(t)
	next := last.Add(period)
	var got []record
	waitUntil(t, 30*time.Second, func() bool {
		got = nil
		for _, r := range rec.snapshot() {
			if r.server != "s2" && !r.through.Before(next) && !r.fire.After(next) {
				got = append(got, r)
			}
		}
		return len(got) > 0
	})
	if len(got) != 1 {
		t.Fatalf("the fire at %s ran %d times: %+v", next.Format("15:04:05"), len(got), got)
	}
	r := got[0]
	t.Logf("the fire at %s ran on %s as a %s run (fire %s through %s), begun %v after it", next.Format("15:04:05"),
		r.server, r.kind, r.fire.Format("15:04:05"), r.through.Format("15:04:05"), r.begin.Sub(next))
	if !r.begin.Before(next.Add(period)) {
		t.Errorf("the fire at %s ran only at %s, with the fire after it: the new owner let it pass", next.Format("15:04:05"), r.begin.Format("15:04:05.000"))
	}
}
