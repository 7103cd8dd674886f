package job_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

// coverCount counts the executions that cover item's fire f: its own run,
// or a misfire or failover run for an earlier fire that began after f.
func coverCount(recs []record, item int, f time.Time) int {
	n := 0
	for _, r := range recs {
		if r.item == item && standsFor(r, f) {
			n++
		}
	}
	return n
}

// checkExactlyOnce asserts that every per-second fire of every item after
// from and before end was covered by exactly one execution: none lost, none
// run twice.
func checkExactlyOnce(t *testing.T, recs []record, from, end time.Time, items int) {
	t.Helper()
	for f := from.Truncate(time.Second).Add(time.Second); f.Before(end); f = f.Add(time.Second) {
		for item := 0; item < items; item++ {
			switch n := coverCount(recs, item, f); {
			case n == 0:
				t.Errorf("fire %s item %d lost", f.Format("15:04:05.000"), item)
			case n > 1:
				t.Errorf("fire %s item %d ran %d times", f.Format("15:04:05.000"), item, n)
			}
		}
	}
	if o := overlaps(recs); len(o) > 0 {
		t.Errorf("overlap: %+v", o[0])
	}
	if t.Failed() {
		for _, r := range recs {
			t.Logf("item %d %s fire %s through %s [%s – %s] on %s", r.item, r.kind, r.fire.Format("15:04:05.000"), r.through.Format("15:04:05.000"), r.begin.Format("15:04:05.000"), r.end.Format("15:04:05.000"), r.server)
		}
	}
}

// A ZooKeeper ensemble restarted with its data wiped refuses every client
// that saw the old data. The instances notice, open new sessions, restore
// the job's nodes and fire again.
func TestWipedZooKeeperFiresAgain(t *testing.T) {
	zc := zktest.Start(t)
	rec := newRecorder()
	cfg := everySecond("wiped", 4)
	a := startInstanceVia(t, "wiped", "s1", zc.Servers(), cfg, rec)
	startInstanceVia(t, "wiped", "s2", zc.Servers(), cfg, rec)
	rec.waitFires(t, time.Now().Add(time.Second), 2, 4, 30*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := zc.RestartAllWiped(ctx); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	fires := rec.waitFires(t, back, 3, 4, 60*time.Second)
	t.Logf("first complete fire %v after the wiped ensemble served again (session timeout %v)",
		fires[0].Sub(back).Round(time.Millisecond), a.rc.(*zookeeper.Center).SessionTimeout())

	// The job's tree is back: its config and both servers' status nodes.
	obs, err := zookeeper.Open(ctx, regcenter.Config{Servers: zc.Servers(), Namespace: "wiped"})
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	for _, p := range []string{"/wiped/config", "/wiped/servers/s1/status", "/wiped/servers/s2/status"} {
		waitUntil(t, 20*time.Second, func() bool {
			ok, _, err := obs.Exists(ctx, p)
			return err == nil && ok
		})
	}
	// Steady again: every item of every later fire runs exactly once.
	from := time.Now()
	rec.waitFires(t, from.Add(time.Second), 3, 4, 30*time.Second)
	checkExactlyOnce(t, rec.snapshot(), from.Add(time.Second), time.Now().Add(-time.Second), 4)
}

// Deleting a live instance's status node must not remove it from the
// cluster: the instance restores the node and keeps its share of items.
func TestDeletedStatusNodeIsRestored(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfg := everySecond("status", 4)
	startInstance(t, ns, "s1", cfg, rec)
	startInstance(t, ns, "s2", cfg, rec)
	obs := observer(t, ns)
	rec.waitFires(t, time.Now().Add(time.Second), 2, 4, 30*time.Second)

	p := "/status/servers/s2/status"
	if err := obs.Delete(tctx(t), p, -1); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 20*time.Second, func() bool {
		ok, _, err := obs.Exists(tctx(t), p)
		return err == nil && ok
	})
	// Both instances run items again (a reshard may pass in between).
	deleted := time.Now()
	waitUntil(t, 30*time.Second, func() bool {
		by := map[string]bool{}
		for f, recs := range rec.fires() {
			if f.After(deleted.Add(2 * time.Second)) {
				for _, r := range recs {
					by[r.server] = true
				}
			}
		}
		return by["s1"] && by["s2"]
	})
	from := deleted.Add(time.Second)
	rec.waitFires(t, time.Now(), 2, 4, 30*time.Second)
	checkEveryFire(t, rec.snapshot(), from, time.Now().Add(-time.Second), 4)
}

// A garbage assignment node is not skipped silently: the instance asks for
// a reshard and runs the fire with the real assignment, so no fire is lost.
func TestGarbageShardingNodeLosesNoFire(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfg := everySecond("gshard", 4)
	startInstance(t, ns, "s1", cfg, rec)
	startInstance(t, ns, "s2", cfg, rec)
	obs := observer(t, ns)
	rec.waitFires(t, time.Now().Add(time.Second), 2, 4, 30*time.Second)

	from := time.Now()
	for _, garbage := range []string{"x,y", "-1", "0,1,banana"} {
		for _, sv := range []string{"s1", "s2"} {
			if _, err := obs.Set(tctx(t), "/gshard/servers/"+sv+"/sharding", []byte(garbage), -1); err != nil {
				t.Fatal(err)
			}
		}
		rec.waitFires(t, time.Now().Add(time.Second), 2, 4, 30*time.Second)
	}
	end := time.Now()
	checkExactlyOnce(t, rec.snapshot(), from, end.Add(-time.Second), 4)
}

// Nodes that block items and that no instance owns — a garbage failover
// entry, a persistent running mark, a persistent status node of a server
// that does not exist — are reported and cleared; the items they blocked
// run.
func TestStuckNodesAreClearedAndTheirItemsRun(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfg := everySecond("stuck", 4)
	cfg.Failover = true
	cfg.ReconcileInterval = time.Second // finds the held mark removed below
	startInstance(t, ns, "s1", cfg, rec)
	obs := observer(t, ns)
	rec.waitFires(t, time.Now().Add(time.Second), 1, 4, 30*time.Second)

	ctx := tctx(t)
	// A fake server that looks online forever: the leader must see through
	// it, or the items assigned to it never run.
	if _, err := obs.Create(ctx, "/stuck/servers/ghost/status", []byte("READY"), regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	// A persistent running mark: nobody's session holds it. It takes the
	// place of the mark s1 holds between runs, removed by hand.
	if err := obs.Delete(ctx, "/stuck/execution/2/running", -1); err != nil && !errors.Is(err, regcenter.ErrNoNode) {
		t.Fatal(err)
	}
	if _, err := obs.Create(ctx, "/stuck/execution/2/running", []byte("not a mark"), regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	// A failover entry nobody can read.
	if _, err := obs.Create(ctx, "/stuck/leader/failover/items/3", []byte("\x00garbage"), regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/stuck/servers/ghost/status", "/stuck/execution/2/running", "/stuck/leader/failover/items/3"} {
		waitUntil(t, 20*time.Second, func() bool {
			// Gone, or (the running mark) an instance's own again.
			ok, st, err := obs.Exists(tctx(t), p)
			return err == nil && (!ok || st.EphemeralOwner != 0)
		})
	}
	from := time.Now()
	rec.waitFires(t, from.Add(time.Second), 3, 4, 30*time.Second)
	checkEveryFire(t, rec.snapshot(), from.Add(time.Second), time.Now().Add(-time.Second), 4)
}

// Runs longer than the period keep every item busy across fires, so each
// fire after the first is made up for by a misfire run. An instance that
// joins moves items between owners while they run: the old owner's debts
// and the new owner's must not make up for the same fire twice.
func TestJoinWithRunsLongerThanThePeriodRunsNoFireTwice(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for half a minute")
	}
	ns := namespace(t)
	rec := newRecorder()
	rec.hold = 5 * time.Second
	cfg := everySecond("long", 8)
	for _, id := range []string{"s1", "s2", "s3"} {
		startInstance(t, ns, id, cfg, rec)
	}
	time.Sleep(6 * time.Second)
	from := time.Now()
	startInstance(t, ns, "s4", cfg, rec)
	time.Sleep(20 * time.Second)
	// A fire is covered by a make-up run that starts up to a run later and
	// is recorded when it ends, another run later.
	end := time.Now().Add(-11 * time.Second)
	recs := rec.snapshot()
	checkExactlyOnce(t, recs, from, end, 8)
	by := map[string]int{}
	for _, r := range recs {
		if r.begin.After(from.Add(3 * time.Second)) {
			by[r.server]++
		}
	}
	if by["s4"] == 0 {
		t.Errorf("the joined instance ran nothing: %v", by)
	}
}
