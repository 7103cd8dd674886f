package job_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
)

// Remove takes one job off a running scheduler: the instance leaves the
// job (its status node goes), runs it no more, and forgets it, while its
// other jobs go on; the other instance takes every item at its next fire.
func TestRemoveTakesAJobOffARunningScheduler(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	other := newRecorder()
	cfg := job.Config{Name: "leaving", Cron: "* * * * * *", ShardingTotalCount: 4}
	stay := job.Config{Name: "staying", Cron: "* * * * * *", ShardingTotalCount: 1}
	a := startInstance(t, ns, "a", cfg, rec)
	if err := a.sched.Add(tctx(t), stay, other.job("a")); err != nil {
		t.Fatal(err)
	}
	startInstance(t, ns, "b", cfg, rec)
	// Both hold items of one fire.
	waitUntil(t, 30*time.Second, func() bool {
		for _, recs := range rec.fires() {
			servers := map[string]bool{}
			for _, r := range recs {
				servers[r.server] = true
			}
			if len(recs) == 4 && servers["a"] && servers["b"] {
				return true
			}
		}
		return false
	})

	if err := a.sched.Remove(tctx(t), "leaving"); err != nil {
		t.Fatal(err)
	}
	removed := time.Now()
	if got := a.sched.Jobs(); !slices.Equal(got, []string{"staying"}) {
		t.Errorf("jobs after Remove %v, want [staying]", got)
	}
	if err := a.sched.Remove(tctx(t), "leaving"); !errors.Is(err, job.ErrUnknownJob) {
		t.Errorf("removing it again: %v, want ErrUnknownJob", err)
	}
	obs := observer(t, ns)
	if ok, _, err := obs.Exists(tctx(t), "/leaving/servers/a/status"); err != nil || ok {
		t.Errorf("a's status node present %v after Remove, err %v", ok, err)
	}
	// b runs every item of a fire after the removal.
	fires := rec.waitFires(t, removed, 1, 4, 30*time.Second)
	for _, r := range rec.fires()[fires[0]] {
		if r.server != "b" {
			t.Errorf("item %d of fire %v ran on %s after a removed the job", r.item, fires[0], r.server)
		}
	}
	for _, r := range rec.snapshot() {
		if r.server == "a" && r.begin.After(removed) {
			t.Errorf("a ran item %d of fire %v after Remove returned", r.item, r.fire)
		}
	}
	// The job left is untouched.
	other.waitFires(t, time.Now(), 1, 1, 30*time.Second)
}
