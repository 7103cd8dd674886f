package job_test

import (
	"context"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// TestWrittenBehindNextFireRunsBesideASlowRecordWrite: while a run's
// completion waits for its record to commit, the item's next fire runs on
// time as a plain fire — its run returned, so nothing overlaps — rather
// than as a make-up run once the write returns; every fire runs once, in
// order, and the record lists them all. Every completion writes its record
// here (no journal), so the write held is a steady one.
func TestWrittenBehindNextFireRunsBesideASlowRecordWrite(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	entered := make(chan time.Time, 64)
	rec.holdFor = func(sc job.ShardingContext) time.Duration {
		select {
		case entered <- sc.FireTime:
		default:
		}
		return 0
	}
	var w *job.HeldWrite
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, s := connectVia(t, ctx, ns, "a", func(rc regcenter.Center) regcenter.Center { w = job.NewHeldRecordWrite(rc); return w },
		job.WithCompletionJournal(false))
	if err := s.Add(ctx, everySecond("slowwrite", 1), rec.job("a")); err != nil {
		t.Fatal(err)
	}
	running(t, ctx, "a", rc, s)
	t.Cleanup(w.Release) // registered after the instance's stop: runs before it
	rec.waitFires(t, time.Now(), 2, 1, 20*time.Second)

	w.Armed.Store(true)
	var heldFire time.Time
	select {
	case <-w.Held():
		// The write held is the completion of the fire that ran last.
		heldFire = lastEntered(entered)
	case <-ctx.Done():
		t.Fatal("no record write came")
	}
	select {
	case at := <-entered:
		if !at.After(heldFire) {
			t.Fatalf("fire %s entered after %s's", at.Format(time.TimeOnly), heldFire.Format(time.TimeOnly))
		}
	case <-time.After(waitSlack * 5 * time.Second):
		t.Fatalf("no fire ran while fire %s's record was being written: the next fire waited for the write", heldFire.Format(time.TimeOnly))
	}
	w.Release()
	end := rec.waitFires(t, heldFire, 2, 1, 20*time.Second)[1]

	// Every fire from the first through end ran once, as a plain fire,
	// each after the one before had returned.
	var last time.Time
	fires := map[time.Time]int{}
	var prevEnd time.Time
	for _, r := range rec.snapshot() {
		if r.fire.After(end) {
			continue
		}
		if r.kind != job.KindFire {
			t.Errorf("fire %s ran as %s; want a plain fire", r.fire.Format(time.TimeOnly), r.kind)
		}
		if r.begin.Before(prevEnd) {
			t.Errorf("fire %s's run began before the last one ended", r.fire.Format(time.TimeOnly))
		}
		prevEnd = r.end
		fires[r.fire]++
		if r.fire.After(last) {
			last = r.fire
		}
	}
	for at, n := range fires {
		if n != 1 {
			t.Errorf("fire %s ran %d times", at.Format(time.TimeOnly), n)
		}
	}
	obs := observer(t, ns)
	waitUntil(t, 10*time.Second, func() bool {
		_, through := recordOf(t, obs, "slowwrite", 0)
		return !through.Before(last)
	})
}

// lastEntered drains entered and returns the latest fire in it.
func lastEntered(entered chan time.Time) time.Time {
	var last time.Time
	for {
		select {
		case at := <-entered:
			if at.After(last) {
				last = at
			}
		default:
			return last
		}
	}
}
