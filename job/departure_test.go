package job_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job"
)

// A death disturbs only the dead instance's jobs: the jobs whose items it
// held reshard; every other job keeps its assignment, with no reshard
// flagged, and keeps running every fire — also those it led, whose new
// leader finds the assignment it inherits holding and keeps it.
func TestDepartureReshardsOnlyTheJobsItTouched(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfgs, names := everySecondJobs(12, 1)
	ins := map[string]*instance{}
	for _, id := range []string{"s1", "s2", "s3"} {
		ins[id] = startJobs(t, ns, id, cfgs, rec)
	}
	three := []string{"s1", "s2", "s3"}
	_, before := settle(t, rec, time.Now(), names, three, 30*time.Second)

	// What each job's leader has resharded so far, and who leads it, once
	// start-up is over: the spread can look settled while a reshard that a
	// join flagged is still to come (a watch's event may come late), and
	// that one is no part of the death. So the counts must hold over two
	// fires with no reshard flagged.
	counts := func(except string) (map[string]int64, map[string]string) {
		reshards, ledBy := map[string]int64{}, map[string]string{}
		for id, in := range ins {
			if id == except {
				continue
			}
			for _, js := range in.sched.Stats().Jobs {
				reshards[js.Job] += js.Reshards
				if js.Leader {
					ledBy[js.Job] = id
				}
			}
		}
		return reshards, ledBy
	}
	flagged := func() bool {
		for _, name := range names {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			ok, _, err := ins["s1"].rc.Exists(ctx, layout.Job(name).Necessary())
			cancel()
			if err != nil || ok {
				return true
			}
		}
		return false
	}
	reshards, ledBy := counts("")
	for end := time.Now().Add(30 * time.Second); ; {
		rec.waitFires(t, time.Now().Add(time.Second), 2, 12, 20*time.Second)
		r2, l2 := counts("")
		if !flagged() && maps.Equal(r2, reshards) && maps.Equal(l2, ledBy) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("start-up kept resharding: %v then %v", reshards, r2)
		}
		reshards, ledBy = r2, l2
	}
	_, before = settle(t, rec, time.Now(), names, three, 30*time.Second)
	// The victim: the instance leading most jobs whose items others hold.
	victim, most := "", -1
	for _, id := range three {
		n := 0
		for name, by := range ledBy {
			if by == id && before[name] != id {
				n++
			}
		}
		if n > most {
			victim, most = id, n
		}
	}
	var survivors []string
	for _, id := range three {
		if id != victim {
			survivors = append(survivors, id)
		}
	}
	// The reshards counted are the survivors' (the victim's counters go
	// with it).
	reshards, _ = counts(victim)
	crashed := time.Now()
	ins[victim].crash(t)
	delete(ins, victim)
	tick, after := settle(t, rec, time.Now(), names, survivors, 30*time.Second)
	// A few fires more, so that a reshard flagged late would show.
	rec.waitFires(t, tick.Add(2*time.Second), 1, 12, 20*time.Second)

	untouched, led := 0, 0
	for _, name := range names {
		if before[name] == victim {
			continue
		}
		untouched++
		if ledBy[name] == victim {
			led++
		}
		var now int64
		for _, in := range ins {
			for _, js := range in.sched.Stats().Jobs {
				if js.Job == name {
					now += js.Reshards
				}
			}
		}
		if now != reshards[name] {
			t.Errorf("job %s (on %s, led by %s) resharded %d times after %s died", name, before[name], ledBy[name], now-reshards[name], victim)
		}
		if after[name] != before[name] {
			t.Errorf("job %s moved from %s to %s", name, before[name], after[name])
		}
	}
	if untouched == 0 || led == 0 {
		t.Fatalf("no job held elsewhere (%d), or none of them led by %s (%d) (holders %v, leaders %v): nothing to check", untouched, victim, led, before, ledBy)
	}
	t.Logf("%d of %d jobs not held by %s, %d of them led by it", untouched, len(names), victim, led)
	// The survivors' own fires around the death start on time: none waits
	// behind the reshard or the make-up runs that the expiry brings (before
	// the leader kept untouched assignments, every job's fire after the
	// expiry queued behind a reshard; before a new leader kept the
	// assignment it inherits, every job the victim led did). The bound is
	// generous, one period: the figure itself is the peers benchmark's.
	var late time.Duration
	for _, r := range rec.snapshot() {
		if r.kind != job.KindFire || r.fire.Before(crashed) || r.fire.After(tick.Add(2*time.Second)) ||
			before[r.job] == victim {
			continue
		}
		d := r.begin.Sub(r.fire)
		late = max(late, d)
		if d >= time.Second {
			t.Errorf("job %s item %d: the fire at %s started %v late, after %s died", r.job, r.item, r.fire.Format("15:04:05"), d, victim)
		}
	}
	t.Logf("the survivors' own fires from the death to two fires after the take-over started at most %v late", late)
	checkItemTicks(t, rec, names, 1, tick, tick.Add(2*time.Second), victim)
}
