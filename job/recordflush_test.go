package job_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// recordOf reads item's completed record of job name: the node's version
// and the latest fire the record covers.
func recordOf(t *testing.T, obs regcenter.Center, name string, item int) (int32, time.Time) {
	t.Helper()
	data, st, err := obs.Get(tctx(t), fmt.Sprintf("/%s/execution/%d/completed", name, item))
	if err != nil {
		t.Fatalf("item %d's record: %v", item, err)
	}
	var m struct {
		Fire int64 `json:"fire"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("item %d's record %q: %v", item, data, err)
	}
	return st.Version, time.UnixMilli(m.Fire)
}

// latestFire is the latest fire of item that recs ran.
func latestFire(recs []record, item int) time.Time {
	var last time.Time
	for _, r := range recs {
		if r.item == item && r.through.After(last) {
			last = r.through
		}
	}
	return last
}

// A held item's record is written once per record interval, not per run,
// and what the runs in between kept here is written at the stop: every
// run the recorder saw is in the record then.
func TestHeldRecordsAreWrittenBehind(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfg := everySecond("behind", 2)
	obs := observer(t, ns)
	a := startInstance(t, ns, "a", cfg, rec, job.WithRecordInterval(5*time.Second))
	rec.waitFires(t, time.Now(), 8, 2, 30*time.Second)
	runs := len(rec.snapshot())
	for item := range 2 {
		// Created by the first run, written again at most once or twice
		// in eight seconds (every run's write would be version 7 or more).
		if v, _ := recordOf(t, obs, "behind", item); v > 2 {
			t.Errorf("item %d's record was written %d times in %d runs of 2 items, want at most 3 (every 5 s)", item, v+1, runs)
		}
	}
	a.stop(t)
	recs := rec.snapshot()
	for item := range 2 {
		if _, through := recordOf(t, obs, "behind", item); !through.Equal(latestFire(recs, item)) {
			t.Errorf("item %d's record after the stop covers through %s, its last run was of %s", item, through.Format("15:04:05"), latestFire(recs, item).Format("15:04:05"))
		}
	}
}

// Records deferred while an instance held its items are written before
// a reshard's release hands the items over: the new owner reads them and
// runs no fire the old one ran.
func TestRecordsWrittenBehindAreWrittenBeforeTheMarksMove(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfg := everySecond("move", 4)
	start := time.Now()
	startInstance(t, ns, "a", cfg, rec, job.WithRecordInterval(time.Minute))
	rec.waitFires(t, start, 4, 4, 30*time.Second)
	startInstance(t, ns, "b", cfg, rec, job.WithRecordInterval(time.Minute))
	waitUntil(t, 30*time.Second, func() bool {
		for _, r := range rec.snapshot() {
			if r.server == "b" {
				return true
			}
		}
		return false
	})
	end := rec.waitFires(t, time.Now(), 3, 4, 30*time.Second)[2]
	recs := rec.snapshot()
	for _, r := range recs {
		if r.kind != job.KindFire {
			// The new owner met the mark before its release (a make-up of
			// that fire, from the record): legitimate, once.
			t.Logf("%s ran item %d as %s (fires %s–%s)", r.server, r.item, r.kind, r.fire.Format("15:04:05"), r.through.Format("15:04:05"))
		}
	}
	// Without the records written at the release, the new owner's make-up
	// runs again the fires the old owner ran since its last record.
	for f := start.Truncate(time.Second).Add(2 * time.Second); !f.After(end); f = f.Add(time.Second) {
		for item := range 4 {
			n := 0
			for _, r := range recs {
				if r.item == item && standsFor(r, f) {
					n++
				}
			}
			if n > 1 {
				t.Errorf("fire %s of item %d ran %d times", f.Format("15:04:05"), item, n)
			}
		}
	}
}

// A crash leaves the runs since its last written record unrecorded: the
// item's next owner makes them up, in one run, and loses no fire.
func TestACrashMakesUpRecordsWrittenBehindInOneRun(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfg := everySecond("crash", 1)
	start := time.Now()
	a := startInstance(t, ns, "a", cfg, rec, job.WithRecordInterval(time.Minute))
	rec.waitFires(t, start, 2, 1, 30*time.Second)
	startInstance(t, ns, "b", cfg, rec, job.WithRecordInterval(time.Minute))
	ranOnA := rec.waitFires(t, time.Now(), 4, 1, 30*time.Second)[3]
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
	makeUps := 0
	for _, r := range recs {
		if r.server == "b" && r.kind != job.KindFire {
			makeUps++
			t.Logf("b made up fires %s–%s (%s)", r.fire.Format("15:04:05"), r.through.Format("15:04:05"), r.kind)
		}
	}
	if makeUps != 1 {
		t.Errorf("b made up %d runs after a's crash, want 1 covering what a ran unrecorded", makeUps)
	}
	if _, through := recordOf(t, observer(t, ns), "crash", 0); through.Before(ranOnA) {
		t.Errorf("the record covers through %s after the make-up, before a's last run %s", through.Format("15:04:05"), ranOnA.Format("15:04:05"))
	}
}
