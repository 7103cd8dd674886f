package job_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
)

// pausedUntil holds every run of the job until it ends, the runs owed
// from before the pause too: a fire that found its item busy just before
// the pause is made up after it, not during it.
func TestClusterPauseHoldsOwedRuns(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfg := everySecond("pause", 1)
	busy := make(chan struct{}, 1)
	var first sync.Once
	var firstFire time.Time // set before busy is sent
	rec.holdFor = func(sc job.ShardingContext) time.Duration {
		long := false
		first.Do(func() { long, firstFire = true, sc.FireTime; busy <- struct{}{} })
		if long {
			return 3 * time.Second // the next fires find the item busy: a run is owed
		}
		return 10 * time.Millisecond
	}
	events := make(chan job.Event, 256)
	a := startInstance(t, ns, "a", cfg, rec, eventsTo(events))
	obs := observer(t, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	select {
	case <-busy:
	case <-ctx.Done():
		t.Fatal("no run began within 30 s")
	}
	// Once the next fire has found the item busy (a run is owed), and while
	// the item still runs, pause the job.
	waitUntil(t, 20*time.Second, func() bool {
		st := a.sched.Stats()
		return len(st.Jobs) == 1 && st.Jobs[0].MisfiresOwed > 0
	})
	paused := cfg
	paused.PausedUntil = time.Now().Add(4 * time.Second).Truncate(time.Second)
	paused.PauseNote = "maintenance"
	doc, err := paused.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := obs.Set(ctx, "/pause/config", doc, -1); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, events, job.EventConfigChanged, 20*time.Second)
	pausedAt := time.Now() // the instance runs under the paused config from here
	// The fire owed from before the pause is made up after it (or, broken,
	// during it).
	owed := firstFire.Add(time.Second)
	madeUp := func() bool {
		for _, r := range rec.snapshot() {
			if r.begin.After(paused.PausedUntil) && standsFor(r, owed) {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(20 * time.Second)
	for !madeUp() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	recs := rec.snapshot()
	if !madeUp() {
		for _, r := range recs {
			t.Logf("%s of fire %s–%s began %s", r.kind, r.fire.Format("15:04:05"), r.through.Format("15:04:05"), r.begin.Format("15:04:05.000"))
		}
		t.Errorf("the fire %s, owed from before the pause, was not made up after it", owed.Format("15:04:05"))
	}
	for _, r := range recs {
		// A run that began once the instance had the paused config and
		// before the pause ends broke the pause.
		if r.begin.After(pausedAt) && r.begin.Before(paused.PausedUntil) {
			t.Errorf("a run (%s of fire %s–%s) began at %s, during the pause until %s",
				r.kind, r.fire.Format("15:04:05"), r.through.Format("15:04:05"), r.begin.Format("15:04:05.000"), paused.PausedUntil.Format("15:04:05"))
		}
	}
}
