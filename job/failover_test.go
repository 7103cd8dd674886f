package job_test

import (
	"context"
	"encoding/json"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
)

// overlaps returns pairs of committed executions of one item on two
// servers whose [begin, end] intervals intersect.
func overlaps(recs []record) [][2]record {
	var out [][2]record
	for i := range recs {
		for j := i + 1; j < len(recs); j++ {
			a, b := recs[i], recs[j]
			if a.item == b.item && a.server != b.server && a.begin.Before(b.end) && b.begin.Before(a.end) {
				out = append(out, [2]record{a, b})
			}
		}
	}
	return out
}

func byKind(recs []record, kind job.Kind) []record {
	var out []record
	for _, r := range recs {
		if r.kind == kind {
			out = append(out, r)
		}
	}
	return out
}

func TestFailoverRunsOnlyUnfinishedItemsOnce(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	var crashing atomic.Bool
	rec.holdFor = func(sc job.ShardingContext) time.Duration {
		if sc.Item == 1 && sc.Kind == job.KindFire && !crashing.Load() {
			return time.Hour // still running when its instance crashes
		}
		return 0
	}
	cfg := job.Config{Name: "fo", Cron: "*/20 * * * * *", ShardingTotalCount: 4, Failover: true}
	s1 := startInstance(t, ns, "s1", cfg, rec)
	startInstance(t, ns, "s2", cfg, rec)
	// s1 holds items 0 and 1 (it started first; s2 took the rest).
	waitUntil(t, 40*time.Second, func() bool {
		for _, r := range rec.snapshot() {
			if r.server == "s1" && r.item == 0 && r.kind == job.KindFire {
				return true
			}
		}
		return false
	})
	fire := rec.snapshot()[0].fire
	// Crash only once item 0's completion is in ZooKeeper: the recorder
	// sees the end of Execute, and an item whose completion had not been
	// written when its instance died is rightly run again (at least once).
	obs := observer(t, ns)
	waitUntil(t, 10*time.Second, func() bool {
		data, _, err := obs.Get(tctx(t), "/fo/execution/0/completed")
		var m struct {
			Server string `json:"server"`
			Fire   int64  `json:"fire"`
		}
		return err == nil && json.Unmarshal(data, &m) == nil && m.Server == "s1" && m.Fire >= fire.UnixMilli()
	})
	crashing.Store(true)
	crashed := time.Now()
	s1.crash(t)

	waitUntil(t, 20*time.Second, func() bool { return len(byKind(rec.snapshot(), job.KindFailover)) > 0 })
	time.Sleep(500 * time.Millisecond) // room for a wrong second failover to show
	fo := byKind(rec.snapshot(), job.KindFailover)
	if len(fo) != 1 || fo[0].item != 1 || fo[0].server != "s2" || !fo[0].fire.Equal(fire) {
		t.Fatalf("failover executions %+v; want exactly item 1 of fire %v on s2", fo, fire)
	}
	t.Logf("item 1 taken over %v after the crash", fo[0].begin.Sub(crashed).Round(time.Millisecond))
	// The completed items of the crashed instance (item 0) did not run
	// again, and nothing ran twice for that fire.
	count := map[int]int{}
	for _, r := range rec.snapshot() {
		if r.fire.Equal(fire) {
			count[r.item]++
		}
	}
	for item := 0; item < 4; item++ {
		if count[item] != 1 {
			t.Errorf("item %d ran %d times for fire %v", item, count[item], fire)
		}
	}
}

func TestMisfiresCollapseIntoOneRun(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	var long atomic.Bool
	long.Store(true)
	rec.holdFor = func(sc job.ShardingContext) time.Duration {
		if sc.Item == 0 && long.CompareAndSwap(true, false) {
			return 3500 * time.Millisecond // misses three fires
		}
		return 0
	}
	startInstance(t, ns, "s1", everySecond("mis", 2), rec)
	var first record
	waitUntil(t, 30*time.Second, func() bool {
		for _, r := range rec.snapshot() {
			if r.item == 0 && r.end.Sub(r.begin) > 3*time.Second {
				first = r
				return true
			}
		}
		return false
	})
	time.Sleep(2500 * time.Millisecond)
	var misfires []record
	for _, r := range rec.snapshot() {
		if r.item == 0 && r.kind == job.KindMisfire {
			misfires = append(misfires, r)
		}
	}
	if len(misfires) != 1 {
		t.Fatalf("%d misfire runs of item 0, want exactly 1 for the fires missed during %v..%v: %+v", len(misfires), first.begin, first.end, misfires)
	}
	if m := misfires[0]; m.begin.Before(first.end) || m.fire.After(first.end) || !m.fire.After(first.fire) {
		t.Errorf("misfire run %+v: want it after %v, making up for the first missed fire", m, first.end)
	}
	// Item 1 was never blocked and never misfired.
	for _, r := range rec.snapshot() {
		if r.item == 1 && r.kind != job.KindFire {
			t.Errorf("item 1 ran as %s", r.kind)
		}
	}
}

func TestFrozenInstanceRunsNothingUntilReRegistered(t *testing.T) {
	needCutOff(t)
	ns := namespace(t)
	rec := newRecorder()
	rec.hold = 800 * time.Millisecond
	cfg := job.Config{Name: "freeze", Cron: "* * * * * *", ShardingTotalCount: 4, Failover: true}
	proxy := registryProxy(t) // closed after the instances' cleanups
	frozen := startInstanceThrough(t, ns, "s1", proxy, cfg, rec)
	startInstance(t, ns, "s2", cfg, rec)
	rec.waitFires(t, time.Now(), 2, 4, 30*time.Second)

	blocked := time.Now()
	proxy.Block() // s1 hears nothing and is heard by no one
	time.Sleep(6 * time.Second)
	proxy.Unblock()
	unblocked := time.Now()
	// s1 comes back in a new session, re-registers and fires again.
	waitUntil(t, 30*time.Second, func() bool {
		for _, r := range rec.snapshot() {
			if r.server == "s1" && r.begin.After(unblocked) {
				return true
			}
		}
		return false
	})
	recs := rec.snapshot()
	if o := overlaps(recs); len(o) > 0 {
		t.Fatalf("%d overlapping executions, first %+v", len(o), o[0])
	}
	for _, r := range recs {
		// Nothing s1 committed after the server could have expired its
		// session (4s after the cut) and before it was back. Its lease
		// ends earlier (2/3 of that); the margin absorbs a loaded machine
		// between a passed StillOwner and the record.
		if r.server == "s1" && r.end.After(blocked.Add(4*time.Second)) && r.end.Before(unblocked) {
			t.Errorf("frozen s1 committed item %d at %v", r.item, r.end)
		}
	}
	// While s1 was gone, s2 ran every item.
	for f, rs := range rec.fires() {
		if f.After(blocked.Add(5*time.Second)) && f.Before(unblocked) {
			for _, r := range rs {
				if r.server != "s2" {
					t.Errorf("fire %v: item %d ran on %s while s1 was cut off", f, r.item, r.server)
				}
			}
		}
	}
	_ = frozen
}

func TestShutdownHandsOverWithNoFireLost(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	rec.hold = 300 * time.Millisecond
	cfg := job.Config{Name: "handover", Cron: "* * * * * *", ShardingTotalCount: 6, Failover: true}
	ins := []*instance{
		startInstance(t, ns, "s1", cfg, rec),
		startInstance(t, ns, "s2", cfg, rec),
		startInstance(t, ns, "s3", cfg, rec),
	}
	start := rec.waitFires(t, time.Now(), 1, 6, 30*time.Second)[0]
	time.Sleep(2300 * time.Millisecond)
	ins[0].stop(t)
	end := rec.waitFires(t, time.Now(), 3, 6, 30*time.Second)[2]
	var fires []time.Time
	all := rec.fires()
	for f := range all {
		if !f.Before(start) && !f.After(end) {
			fires = append(fires, f)
		}
	}
	sort.Slice(fires, func(i, j int) bool { return fires[i].Before(fires[j]) })
	if len(fires) < int(end.Sub(start)/time.Second) {
		t.Errorf("%d fires recorded between %v and %v", len(fires), start, end)
	}
	// A run covers every fire from its own through the latest it stands
	// for: a fire the leave came too late for (after the survivors had
	// taken their items for it) is made up by the new owner's next fire,
	// one run standing for both.
	covered := map[time.Time]map[int]bool{}
	for _, r := range rec.snapshot() {
		for f := r.fire; !f.After(r.through); f = f.Add(time.Second) {
			if covered[f] == nil {
				covered[f] = map[int]bool{}
			}
			covered[f][r.item] = true
		}
	}
	for f := start; !f.After(end); f = f.Add(time.Second) {
		for item := 0; item < 6; item++ {
			if !covered[f][item] {
				t.Errorf("fire %s item %d lost across the shutdown", f.Format("15:04:05"), item)
			}
		}
	}
}

func TestShutdownDeadlineHandsRunningItemsOver(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	var slow, started atomic.Bool
	slow.Store(true)
	rec.holdFor = func(sc job.ShardingContext) time.Duration {
		if sc.ServerID == "s1" && slow.Load() {
			started.Store(true)
			return time.Hour
		}
		return 0
	}
	cfg := job.Config{Name: "deadline", Cron: "*/30 * * * * *", ShardingTotalCount: 2, Failover: true}
	s1 := startInstance(t, ns, "s1", cfg, rec)
	startInstance(t, ns, "s2", cfg, rec)
	// Running, not only claimed: a fire marks its items a lead ahead of
	// its time, and a stop before that time starts nothing.
	waitUntil(t, 40*time.Second, started.Load)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s1.sched.Shutdown(ctx)
	if err == nil {
		t.Fatal("Shutdown returned nil though it had to cancel a running item")
	}
	s1.rc.Close()
	s1.sched = nil
	waitUntil(t, 20*time.Second, func() bool { return len(byKind(rec.snapshot(), job.KindFailover)) > 0 })
	fo := byKind(rec.snapshot(), job.KindFailover)
	if fo[0].server != "s2" || fo[0].item != 0 {
		t.Fatalf("failover %+v, want item 0 on s2", fo[0])
	}
}

func startInstanceVia(t *testing.T, ns, id string, servers []string, cfg job.Config, rec *recorder, opts ...job.Option) *instance {
	t.Helper()
	return startInstanceOn(t, id, regcenter.Config{Servers: servers, Namespace: ns, SessionTimeout: 4 * time.Second}, cfg, rec, opts...)
}

// startInstanceThrough is startInstance with the instance's registry
// reached through proxy, which can cut it off.
func startInstanceThrough(t *testing.T, ns, id string, proxy *zktest.Proxy, cfg job.Config, rec *recorder, opts ...job.Option) *instance {
	t.Helper()
	return startInstanceOn(t, id, viaProxy(t, proxy, regcenter.Config{Namespace: ns, SessionTimeout: 4 * time.Second}), cfg, rec, opts...)
}

// startInstanceOn starts instance id with the single job cfg on a
// registry of its own made from rcfg, stopped when the test ends.
func startInstanceOn(t *testing.T, id string, rcfg regcenter.Config, cfg job.Config, rec *recorder, opts ...job.Option) *instance {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, err := regcenter.Open(ctx, rcfg, regcenter.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	s, err := job.NewScheduler(rc, append([]job.Option{job.WithServerID(id), job.WithLogger(testLogger(t).With("instance", id))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(ctx, cfg, rec.job(id)); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	in := &instance{id: id, rc: rc, sched: s}
	t.Cleanup(func() { in.stop(t) })
	return in
}

// covered reports whether some execution made up for item's fire f: its own
// run, or a misfire or failover run that stands for it (FireTime through
// Through).
func covered(recs []record, item int, f time.Time) bool {
	for _, r := range recs {
		if r.item == item && standsFor(r, f) {
			return true
		}
	}
	return false
}

// standsFor reports whether execution r made up for its item's fire f.
func standsFor(r record, f time.Time) bool {
	if r.fire.Equal(f) {
		return true
	}
	return (r.kind == job.KindMisfire || r.kind == job.KindFailover) && r.fire.Before(f) && !r.through.Before(f)
}

func TestShutdownWhileAnItemRunsLosesNoFire(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	var long, started atomic.Bool
	long.Store(true)
	rec.holdFor = func(sc job.ShardingContext) time.Duration {
		if sc.ServerID == "a" && sc.Item == 0 && long.CompareAndSwap(true, false) {
			started.Store(true)
			return 4 * time.Second
		}
		return 0
	}
	cfg := job.Config{Name: "slowleave", Cron: "* * * * * *", ShardingTotalCount: 3, Failover: true}
	a := startInstance(t, ns, "a", cfg, rec)
	startInstance(t, ns, "b", cfg, rec)
	// a holds items 0 and 2; wait until its long run of item 0 is on.
	waitUntil(t, 30*time.Second, started.Load)
	left := time.Now()
	a.stop(t) // waits for item 0 to finish
	end := rec.waitFires(t, time.Now().Add(time.Second), 2, 3, 30*time.Second)[1]
	checkEveryFire(t, rec.snapshot(), left, end, 3)
}

// checkEveryFire asserts that every per-second fire of every item after
// from and before end was covered by a committed execution, and that no
// two executions of an item overlapped.
func checkEveryFire(t *testing.T, recs []record, from, end time.Time, items int) {
	t.Helper()
	for f := from.Truncate(time.Second).Add(time.Second); f.Before(end); f = f.Add(time.Second) {
		for item := 0; item < items; item++ {
			if !covered(recs, item, f) {
				t.Errorf("fire %s item %d lost", f.Format("15:04:05.000"), item)
			}
		}
	}
	if o := overlaps(recs); len(o) > 0 {
		t.Errorf("overlap: %+v", o[0])
	}
}
