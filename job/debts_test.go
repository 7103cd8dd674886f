package job_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// A failover entry for an item its owner runs back to back (every run
// outlasts the period) is still paid: the claimer that finds the item
// running elsewhere gives its claim back instead of holding it, and the
// entry is run — once, labelled with its fire — and dequeued.
func TestQueuedDebtOfABusyItemIsPaid(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	rec.hold = 1500 * time.Millisecond // longer than the period: always busy
	cfg := job.Config{Name: "busy", Cron: "* * * * * *", ShardingTotalCount: 2, Failover: true}
	startInstance(t, ns, "a", cfg, rec)
	startInstance(t, ns, "b", cfg, rec)
	obs := observer(t, ns)
	waitUntil(t, 30*time.Second, func() bool {
		n := 0
		for _, r := range rec.snapshot() {
			if r.item == 0 {
				n++
			}
		}
		return n >= 2
	})
	// A debt left by some departed instance: item 0 owes a fire from ten
	// seconds ago.
	owed := time.Now().Add(-10 * time.Second).Truncate(time.Second)
	data, _ := json.Marshal(map[string]any{"fire": owed.UnixMilli(), "from": "gone"})
	if _, err := obs.Create(tctx(t), "/busy/leader/failover/items/0", data, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, func() bool {
		for _, r := range byKind(rec.snapshot(), job.KindFailover) {
			if r.item == 0 && r.fire.Equal(owed) {
				return true
			}
		}
		return false
	})
	// The entry and its claim are gone once the run is committed.
	waitUntil(t, 10*time.Second, func() bool {
		q, _, err := obs.Exists(tctx(t), "/busy/leader/failover/items/0")
		c, _, err2 := obs.Exists(tctx(t), "/busy/execution/0/failover")
		return err == nil && err2 == nil && !q && !c
	})
	fo := byKind(rec.snapshot(), job.KindFailover)
	if len(fo) != 1 {
		t.Errorf("%d failover runs %+v, want 1", len(fo), fo)
	}
	if o := overlaps(rec.snapshot()); len(o) > 0 {
		t.Errorf("overlap: %+v", o[0])
	}
}

// An instance cut off from ZooKeeper keeps its status node until its
// session expires; a reshard meanwhile (a third instance joins) moves some
// of its items to others, and the fires it missed for them are recorded
// nowhere but in each item's completed node. The new owner makes up for
// them at its first fire of the item, so no fire is lost.
func TestNewOwnerMakesUpForFiresItsPredecessorMissed(t *testing.T) {
	needCutOff(t)
	ns := namespace(t)
	rec := newRecorder()
	cfg := job.Config{Name: "inherit", Cron: "* * * * * *", ShardingTotalCount: 4, Failover: true, ShardingStrategy: "AVG_ALLOCATION"}
	proxy := registryProxy(t)
	// "a" sorts first and "b" second: AVG_ALLOCATION gives a [0 1], b
	// [2 3]; with c it gives a [0 3], b [1], c [2]: items 2 and 3 leave b.
	startInstance(t, ns, "a", cfg, rec)
	startInstanceThrough(t, ns, "b", proxy, cfg, rec)
	rec.waitFires(t, time.Now(), 2, 4, 30*time.Second)

	cut := time.Now()
	proxy.Block()
	time.Sleep(1500 * time.Millisecond) // b misses fires of items 2 and 3
	startInstance(t, ns, "c", cfg, rec)
	time.Sleep(6 * time.Second) // b's session expires meanwhile
	proxy.Unblock()
	end := rec.waitFires(t, time.Now(), 2, 4, 30*time.Second)[1]

	recs := rec.snapshot()
	checkEveryFire(t, recs, cut, end, 4)
	madeUp := false
	for _, r := range byKind(recs, job.KindMisfire) {
		if (r.item == 2 || r.item == 3) && r.server != "b" && !r.fire.After(cut.Add(time.Second)) {
			madeUp = true
			t.Logf("%s made up for item %d since %s", r.server, r.item, r.fire.Format("15:04:05"))
		}
	}
	if !madeUp {
		var lines []string
		for _, r := range recs {
			if r.begin.After(cut.Add(-2 * time.Second)) {
				lines = append(lines, r.server+" "+string(r.kind)+" "+r.fire.Format("15:04:05"))
			}
		}
		t.Errorf("no new owner made up for b's missed fires of items 2, 3:\n%s", strings.Join(lines, "\n"))
	}
}

// A process that restarts under the same server id before its old session
// expired owes its items the fires they missed; its first run makes up for
// them. A fire that finds that run still going is owed a run of its own:
// the catch-up began before it and does not cover it.
func TestFireMissedDuringCatchUpIsStillOwed(t *testing.T) {
	needCutOff(t)
	ns := namespace(t)
	rec := newRecorder()
	rec.hold = 1500 * time.Millisecond // longer than the period
	cfg := job.Config{Name: "catchup", Cron: "* * * * * *", ShardingTotalCount: 1}
	proxy := registryProxy(t)
	// The old instance stands for another process of this host, which
	// is gone by the time the new one starts.
	host, _ := os.Hostname()
	old := startInstanceThrough(t, ns, "a", proxy, cfg, rec, job.WithProcessForTest(host, deadPID(t)))
	waitUntil(t, 30*time.Second, func() bool { return len(rec.snapshot()) >= 2 })

	// The old process goes silent; a new one with the same id starts and
	// takes the id over (the old process is gone), while the old session
	// has not expired yet: the items' running marks are still the old
	// session's.
	cut := time.Now()
	proxy.Block()
	startInstance(t, ns, "a", cfg, rec)
	time.Sleep(8 * time.Second)
	end := time.Now().Add(-3 * time.Second) // runs owed near the end may not be done
	old.crash(t)                            // it never hears from ZooKeeper again

	checkEveryFire(t, rec.snapshot(), cut, end, 1)
}

// A debt older than what its item's completed record lists runs only the
// fires the record does not list: the ones before it and the hole in it. The
// record lists runs of fires that ran; running them again would run them
// twice. The run's completion adds its fires to the record, and the fires
// after the record are owed and run once.
func TestDebtRunsOnlyTheFiresTheRecordDoesNotList(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfg := job.Config{Name: "hole", Cron: "* * * * * *", ShardingTotalCount: 1, Failover: true}
	obs := observer(t, ns)

	// Before any instance runs: an instance since gone ran every fire
	// from floor through last but one (hole), and left a debt since owed,
	// older than floor, in the failover queue.
	now := time.Now().Truncate(time.Second)
	owed, floor, hole, last := now.Add(-12*time.Second), now.Add(-8*time.Second), now.Add(-5*time.Second), now.Add(-2*time.Second)
	ran := [][2]int64{{floor.UnixMilli(), hole.Add(-time.Second).UnixMilli()}, {hole.Add(time.Second).UnixMilli(), last.UnixMilli()}}
	mark, _ := json.Marshal(map[string]any{"server": "gone", "fire": last.UnixMilli(), "ran": ran, "kind": "fire"})
	if err := obs.EnsurePath(tctx(t), "/hole/execution/0"); err != nil {
		t.Fatal(err)
	}
	if _, err := obs.Create(tctx(t), "/hole/execution/0/completed", mark, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	entry, _ := json.Marshal(map[string]any{"fire": owed.UnixMilli(), "from": "gone"})
	if err := obs.EnsurePath(tctx(t), "/hole/leader/failover/items"); err != nil {
		t.Fatal(err)
	}
	if _, err := obs.Create(tctx(t), "/hole/leader/failover/items/0", entry, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}

	startInstance(t, ns, "a", cfg, rec)
	end := rec.waitFires(t, time.Now(), 3, 1, 30*time.Second)[0]
	waitUntil(t, 10*time.Second, func() bool {
		q, _, err := obs.Exists(tctx(t), "/hole/leader/failover/items/0")
		return err == nil && !q
	})

	recs := rec.snapshot()
	for _, r := range recs {
		if !r.begin.After(end) {
			t.Logf("%s %s fire=%s through=%s", r.server, r.kind, r.fire.Format("15:04:05"), r.through.Format("15:04:05"))
		}
	}
	for f := owed; f.Before(end); f = f.Add(time.Second) {
		n := 0
		for _, r := range recs {
			if r.item == 0 && standsFor(r, f) {
				n++
			}
		}
		want := 1
		if !f.Before(floor) && !f.After(last) && !f.Equal(hole) {
			want = 0 // the record's: they ran on "gone"
		}
		if n != want {
			t.Errorf("fire %s ran %d times, want %d", f.Format("15:04:05"), n, want)
		}
	}
	// The record now lists every fire from owed on as one run.
	data, _, err := obs.Get(tctx(t), "/hole/execution/0/completed")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Ran [][2]int64 `json:"ran"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Ran) == 0 || got.Ran[0][0] > owed.UnixMilli() || got.Ran[0][1] < last.UnixMilli() {
		t.Errorf("completed record %s does not list every fire from %s through %s as one run", data, owed.Format("15:04:05"), last.Format("15:04:05"))
	}
}

// TestCompletionKeepsWhatAnotherInstanceRecorded writes, between two fires
// of the instance that holds the item, a run of fires into the item's
// record, as a failover run elsewhere would: the holder's next completion
// must add to that record, not overwrite it from what it remembers. With
// records written behind (a record interval, or the completion journal,
// the default), the holder's next runs keep theirs until its stop writes
// them, over the record written elsewhere.
func TestCompletionKeepsWhatAnotherInstanceRecorded(t *testing.T) {
	for _, c := range []struct {
		name   string
		behind bool
		opt    job.Option
	}{
		{"every completion written", false, job.WithCompletionJournal(false)},
		{"journalled", true, job.WithCompletionJournal(true)},
		{"records every 20s", true, job.WithRecordInterval(20 * time.Second)},
	} {
		t.Run(c.name, func(t *testing.T) { completionKeepsWhatAnotherRecorded(t, c.behind, c.opt) })
	}
}

func completionKeepsWhatAnotherRecorded(t *testing.T, behind bool, opt job.Option) {
	ns := namespace(t)
	rec := newRecorder()
	cfg := job.Config{Name: "keep", Cron: "* * * * * *", ShardingTotalCount: 1}
	obs := observer(t, ns)
	a := startInstance(t, ns, "a", cfg, rec, opt)
	rec.waitFires(t, time.Now(), 2, 1, 30*time.Second)

	type mark struct {
		Server string     `json:"server"`
		Fire   int64      `json:"fire"`
		Ran    [][2]int64 `json:"ran"`
		Kind   string     `json:"kind"`
	}
	elsewhere := time.Now().Truncate(time.Second).Add(-time.Hour).UnixMilli()
	p := "/keep/execution/0/completed"
	read := func() (mark, []byte, int32) {
		data, st, err := obs.Get(tctx(t), p)
		if err != nil {
			t.Fatal(err)
		}
		var m mark
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		return m, data, st.Version
	}
	for {
		m, _, version := read()
		m.Server = "elsewhere"
		m.Ran = append([][2]int64{{elsewhere, elsewhere}}, m.Ran...)
		data, _ := json.Marshal(m)
		_, err := obs.Set(tctx(t), p, data, version)
		if errors.Is(err, regcenter.ErrBadVersion) {
			continue // a completion came first: write over it
		}
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	rec.waitFires(t, time.Now(), 2, 1, 30*time.Second)
	if behind {
		a.stop(t)
	}
	got, data, _ := read()
	if got.Server != "a" {
		t.Fatalf("record %s: not written by a since", data)
	}
	if len(got.Ran) == 0 || got.Ran[0] != [2]int64{elsewhere, elsewhere} {
		t.Errorf("record %s dropped the run written elsewhere, [%d %d]", data, elsewhere, elsewhere)
	}
}
