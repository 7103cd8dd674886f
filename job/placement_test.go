package job_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/jobhook"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/job/internal/placement"
)

// startJobs starts instance id running every config, each job recorded
// by rec.
func startJobs(t *testing.T, ns, id string, cfgs []job.Config, rec *recorder, opts ...job.Option) *instance {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, s := connect(t, ctx, ns, id, opts...)
	for _, cfg := range cfgs {
		if err := s.Add(ctx, cfg, rec.job(id)); err != nil {
			t.Fatal(err)
		}
	}
	return running(t, ctx, id, rc, s)
}

// holdersAt returns, for the scheduled fire at tick, which server ran
// each job (jobs that did not run at tick are absent).
func holdersAt(rec *recorder, tick time.Time) map[string]string {
	out := map[string]string{}
	for _, r := range rec.snapshot() {
		if r.kind == job.KindFire && r.fire.Equal(tick) {
			out[r.job] = r.server
		}
	}
	return out
}

func perServer(holders map[string]string) map[string]int {
	out := map[string]int{}
	for _, s := range holders {
		out[s]++
	}
	return out
}

func spreadOf(counts map[string]int, servers []string) int {
	lo, hi := -1, 0
	for _, s := range servers {
		if lo < 0 || counts[s] < lo {
			lo = counts[s]
		}
		hi = max(hi, counts[s])
	}
	return hi - lo
}

// everySecondJobs returns n jobs of items items each, firing every
// second, and their names.
func everySecondJobs(n, items int) ([]job.Config, []string) {
	var cfgs []job.Config
	var names []string
	for i := range n {
		cfg := everySecond(fmt.Sprintf("job-%02d", i), items)
		cfgs = append(cfgs, cfg)
		names = append(names, cfg.Name)
	}
	return cfgs, names
}

// The scenario: 30 one-item jobs on 3 instances with the default
// settings are 10/10/10; a fourth instance takes units only from the
// others, never moving one between two old instances; a crashed instance's
// units spread over the rest; no tick runs twice or never.
func TestPlacementSpreadsOneItemJobsAcrossInstances(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfgs, names := everySecondJobs(30, 1)
	ins := map[string]*instance{}
	for _, id := range []string{"s1", "s2", "s3"} {
		ins[id] = startJobs(t, ns, id, cfgs, rec)
	}
	start := time.Now()
	three := []string{"s1", "s2", "s3"}
	tick3, before := settle(t, rec, start, names, three, 30*time.Second)
	if got := perServer(before); !maps.Equal(got, map[string]int{"s1": 10, "s2": 10, "s3": 10}) {
		t.Fatalf("30 jobs on 3 instances: %v", got)
	}

	ins["s4"] = startJobs(t, ns, "s4", cfgs, rec)
	four := []string{"s1", "s2", "s3", "s4"}
	tick4, after := settle(t, rec, time.Now(), names, four, 30*time.Second)
	t.Logf("after s4 joined: %v", perServer(after))
	for name, was := range before {
		if now := after[name]; now != was && now != "s4" {
			t.Errorf("job %s moved from %s to %s, between two old instances", name, was, now)
		}
	}

	ins["s2"].crash(t)
	rest := []string{"s1", "s3", "s4"}
	tickKill, afterKill := settle(t, rec, time.Now(), names, rest, 30*time.Second)
	t.Logf("after s2 crashed: %v", perServer(afterKill))
	for name, was := range after {
		if now := afterKill[name]; now != was && was != "s2" {
			t.Errorf("job %s moved from %s to %s; only s2's jobs should move", name, was, now)
		}
	}
	// Let a few more ticks run, then check every tick from the first
	// settled one.
	last := tickKill.Add(3 * time.Second)
	rec.waitFires(t, last.Add(-time.Millisecond), 1, 30, 20*time.Second)
	_ = tick4
	checkItemTicks(t, rec, names, 1, tick3, last, "s2")
}

// An instance on the drain list hands its units to the others before their
// next fire, lets its running items finish, reports itself drained, and
// takes units again when taken off the list; nothing runs twice or never.
func TestPlacementDrain(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	rec.hold = 300 * time.Millisecond
	cfgs, names := everySecondJobs(6, 2)
	events := make(chan job.Event, 64)
	ins := map[string]*instance{}
	for _, id := range []string{"s1", "s2", "s3"} {
		opts := []job.Option{}
		if id == "s2" {
			opts = append(opts, job.WithEventHandler(func(ev job.Event) {
				select {
				case events <- ev:
				default:
				}
			}))
		}
		ins[id] = startJobs(t, ns, id, cfgs, rec, opts...)
	}
	servers := []string{"s1", "s2", "s3"}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	first, _, even := settleItemsWithin(rec, time.Now(), names, 2, servers, 6*time.Second)
	if !even {
		// Instances that start one after another can leave two-item jobs
		// placed 3/4/5 (docs/design.md, "Placement across jobs": nothing
		// evens a settled namespace out on its own yet); the operator's
		// rebalance does, and this test is about the drain.
		t.Log("start-up left the namespace uneven; rebalancing as an operator would")
		if _, err := jobhook.Rebalance(ctx, ins["s1"].rc); err != nil {
			t.Fatal(err)
		}
		first, _ = settleItems(t, rec, time.Now(), names, 2, servers, 30*time.Second)
	}

	if err := job.Drain(ctx, ins["s1"].rc, "s2"); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, events, job.EventDrained, 30*time.Second)
	if st := ins["s2"].sched.Placement(); !st.Drained || st.Units != 0 || st.Running != 0 {
		t.Fatalf("s2 after drained: %+v", st)
	}
	tickDrained, _ := settleItems(t, rec, time.Now(), names, 2, []string{"s1", "s3"}, 30*time.Second)

	if err := job.Undrain(ctx, ins["s1"].rc, "s2"); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, events, job.EventUndrained, 30*time.Second)
	last, _ := settleItems(t, rec, time.Now(), names, 2, servers, 30*time.Second)
	_ = tickDrained
	checkItemTicks(t, rec, names, 2, first, last, "")
}

func waitEvent(t *testing.T, events <-chan job.Event, kind job.EventKind, deadline time.Duration) job.Event {
	t.Helper()
	timeout := time.After(waitSlack * deadline)
	for {
		select {
		case ev := <-events:
			if ev.Kind == kind {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s event within %v", kind, deadline)
		}
	}
}

// settleItems waits for a fire after since in which every job ran all its
// items, on exactly servers, spread within one unit, and returns the latest
// such fire and the items each server ran in it.
func settleItems(t *testing.T, rec *recorder, since time.Time, jobs []string, items int, servers []string, deadline time.Duration) (time.Time, map[string]int) {
	t.Helper()
	tick, counts, ok := settleItemsWithin(rec, since, jobs, items, servers, deadline)
	if !ok {
		t.Fatalf("no fire after %v ran %d jobs' items spread over %v", since.Format("15:04:05"), len(jobs), servers)
	}
	return tick, counts
}

// settleItemsWithin is settleItems reporting whether such a fire came
// instead of failing the test.
func settleItemsWithin(rec *recorder, since time.Time, jobs []string, items int, servers []string, deadline time.Duration) (time.Time, map[string]int, bool) {
	end := time.Now().Add(deadline)
	for time.Now().Before(end) {
		by := map[time.Time][]record{}
		for _, r := range rec.snapshot() {
			if r.kind == job.KindFire && r.fire.After(since) {
				by[r.fire] = append(by[r.fire], r)
			}
		}
		for _, tick := range slices.SortedFunc(maps.Keys(by), func(a, b time.Time) int { return b.Compare(a) }) {
			recs := by[tick]
			if len(recs) != len(jobs)*items {
				continue
			}
			counts := map[string]int{}
			for _, r := range recs {
				counts[r.server]++
			}
			if len(counts) == len(servers) && spreadOf(counts, servers) <= 1 {
				return tick, counts, true
			}
		}
		select {
		case <-rec.sig:
		case <-time.After(200 * time.Millisecond):
		}
	}
	return time.Time{}, nil, false
}

// settle is settleItems for one-item jobs, returning which server ran
// each job at that fire.
func settle(t *testing.T, rec *recorder, since time.Time, jobs []string, servers []string, deadline time.Duration) (time.Time, map[string]string) {
	t.Helper()
	tick, _ := settleItems(t, rec, since, jobs, 1, servers, deadline)
	return tick, holdersAt(rec, tick)
}

// checkItemTicks asserts that every item of every job ran each scheduled
// fire from first through last once: by a fire of its own, or covered by
// a make-up run. One exception is documented (docs/guarantees.md): an
// instance killed after an execution's side effect but before its
// completion record has that fire made up by the item's next holder, so a
// fire the crashed instance ran may run once more as a make-up run
// elsewhere ("" when no instance crashed).
func checkItemTicks(t *testing.T, rec *recorder, jobs []string, items int, first, last time.Time, crashed string) {
	t.Helper()
	type key struct {
		job  string
		item int
	}
	type run struct {
		server string
		kind   job.Kind
	}
	runs := map[key]map[time.Time][]run{}
	for _, r := range rec.snapshot() {
		k := key{r.job, r.item}
		if runs[k] == nil {
			runs[k] = map[time.Time][]run{}
		}
		through := r.fire
		if r.kind != job.KindFire {
			through = r.through
		}
		for tick := r.fire; !tick.After(through); tick = tick.Add(time.Second) {
			runs[k][tick] = append(runs[k][tick], run{r.server, r.kind})
		}
	}
	for _, name := range jobs {
		for it := range items {
			for tick := first; !tick.After(last); tick = tick.Add(time.Second) {
				rs := runs[key{name, it}][tick]
				if len(rs) == 2 && (rs[0].server == crashed) != (rs[1].server == crashed) &&
					(rs[0].kind != job.KindFire || rs[1].kind != job.KindFire) {
					t.Logf("job %s item %d, tick %s: run by %s before it crashed and made up after: %v", name, it, tick.Format("15:04:05"), crashed, rs)
					continue
				}
				if len(rs) != 1 {
					t.Errorf("job %s item %d, tick %s ran %d times: %v", name, it, tick.Format("15:04:05"), len(rs), rs)
				}
			}
		}
	}
}

func eventsTo(ch chan job.Event) job.Option {
	return job.WithEventHandler(func(ev job.Event) {
		select {
		case ch <- ev:
		default:
		}
	})
}

// An instance holding more units than its alarm threshold raises the
// alarm once; when instances join and take units from it, it clears.
func TestPlacementAlarm(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfgs, _ := everySecondJobs(6, 1)
	events := make(chan job.Event, 64)
	s1 := startJobs(t, ns, "s1", cfgs, rec, job.WithAlarmThreshold(2), eventsTo(events))
	ev := waitEvent(t, events, job.EventAlarm, 30*time.Second)
	if ev.Threshold != 2 || ev.Units <= 2 || ev.Server != "s1" {
		t.Fatalf("alarm event %+v", ev)
	}
	startJobs(t, ns, "s2", cfgs, rec)
	startJobs(t, ns, "s3", cfgs, rec)
	ev = waitEvent(t, events, job.EventAlarmCleared, 30*time.Second)
	if ev.Units > 2 {
		t.Fatalf("cleared with %d units", ev.Units)
	}
	if st := s1.sched.Placement(); st.Alarmed || st.Units != 2 {
		t.Fatalf("s1 after the others joined: %+v", st)
	}
}

// Caps: a job that only one of three instances runs may put at most
// N = 1 + K/(S−1) units there; the rest stay unplaced, reported, and are
// placed as soon as an instance leaves and the cap grows.
func TestPlacementCapsLeaveUnitsUnplacedUntilThereIsRoom(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	events := make(chan job.Event, 64)
	big := everySecond("big", 12)
	// b and c first: a's first reshard must count them. (Instances that
	// join later lower the caps only at a reshard something else asks
	// for.)
	startJobs(t, ns, "b", nil, rec)
	c := startJobs(t, ns, "c", nil, rec)
	a := startJobs(t, ns, "a", []job.Config{big}, rec, eventsTo(events))
	// K=12, S=3: N = 1 + 12/2 = 7 on a.
	ev := waitEvent(t, events, job.EventUnplaced, 30*time.Second)
	if ev.Job != "big" || ev.Units != 5 {
		t.Fatalf("unplaced event %+v, want 5 units of big", ev)
	}
	waitUntil(t, 30*time.Second, func() bool {
		st := a.sched.Placement()
		return st.Units == 7
	})
	first := time.Now()
	recs := rec.waitFires(t, first, 1, 7, 20*time.Second)
	if got := len(rec.fires()[recs[0]]); got != 7 {
		t.Fatalf("a fire ran %d items, want the 7 placed", got)
	}
	// c leaves: S=2, N = 1 + 12/1 = 13: every item fits.
	c.stop(t)
	rec.waitFires(t, time.Now(), 1, 12, 30*time.Second)
	if st := a.sched.Placement(); st.Units != 12 {
		t.Fatalf("a after c left: %+v", st)
	}
}

// Garbage in the load table is named by readers and rebuilt from the jobs'
// assignments by the next reshard; placement goes on.
func TestPlacementRebuildsAGarbageLoadTable(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfgs, names := everySecondJobs(3, 2)
	startJobs(t, ns, "s1", cfgs, rec)
	settleItems(t, rec, time.Now(), names, 2, []string{"s1"}, 30*time.Second)
	obs := observer(t, ns)
	if _, err := obs.Set(tctx(t), "/.placement", []byte(`{"units":{"s1":-4},"bogus":1}`), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := jobhook.ReadNamespace(tctx(t), obs, testLogger(t)); !errors.Is(err, job.ErrTableGarbage) {
		t.Fatalf("reading a garbage table: %v, want ErrTableGarbage", err)
	}
	startJobs(t, ns, "s2", cfgs, rec)
	settleItems(t, rec, time.Now(), names, 2, []string{"s1", "s2"}, 30*time.Second)
	var got jobhook.Namespace
	waitUntil(t, 30*time.Second, func() bool {
		var err error
		got, err = jobhook.ReadNamespace(tctx(t), obs, testLogger(t))
		return err == nil && got.Units == 6 && len(got.Instances) == 2 && got.Instances[0].Units == 3 && got.Instances[1].Units == 3
	})
}

// The load table's bounds are job's public ones: a table counting a job's
// largest item count decodes, and an instance shown without a node has
// the default tolerance.
func TestPlacementBoundsAreJobs(t *testing.T) {
	if placement.MaxJobUnits != job.MaxShardingTotalCount {
		t.Errorf("placement.MaxJobUnits %d, job.MaxShardingTotalCount %d", placement.MaxJobUnits, job.MaxShardingTotalCount)
	}
	if placement.DefaultFaultTolerance != job.DefaultFaultTolerance {
		t.Errorf("placement.DefaultFaultTolerance %d, job.DefaultFaultTolerance %d", placement.DefaultFaultTolerance, job.DefaultFaultTolerance)
	}
}
