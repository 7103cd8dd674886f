package book

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/regcenter"
)

// TestRanCovers: which debts a run makes up for, and through which fire.
func TestRanCovers(t *testing.T) {
	for _, c := range []struct {
		name   string
		r      Ran
		since  time.Time
		covers bool
		upTo   time.Time
	}{
		{"a fire, no debt", Ran{Kind: Fire, Fire: at(10)}, time.Time{}, true, at(10)},
		{"a fire, owed since it", Ran{Kind: Fire, Fire: at(10)}, at(10), true, at(10)},
		{"a fire, owed since an earlier one", Ran{Kind: Fire, Fire: at(10)}, at(8), false, at(10)},
		{"a fire, owed since a later one", Ran{Kind: Fire, Fire: at(10)}, at(12), true, at(10)},
		{"a make-up run covers an earlier debt", Ran{Kind: Misfire, Fire: at(10), Through: at(12)}, at(8), true, at(12)},
		{"a make-up run does not cover a debt after it", Ran{Kind: Misfire, Fire: at(10), Through: at(12)}, at(13), false, at(12)},
		{"a failover run, owed since an earlier fire", Ran{Kind: Failover, Fire: at(10), Through: at(12)}, at(8), false, at(12)},
		{"a failover run, owed within it", Ran{Kind: Failover, Fire: at(10), Through: at(12)}, at(11), true, at(12)},
		{"a trigger stands for its own fire", Ran{Kind: Trigger, Fire: at(10), Through: at(12)}, time.Time{}, true, at(10)},
	} {
		if got := c.r.Covers(c.since); got != c.covers {
			t.Errorf("%s: covers %v, want %v", c.name, got, c.covers)
		}
		if got := c.r.UpTo(); !got.Equal(c.upTo) {
			t.Errorf("%s: up to %v, want %v", c.name, got, c.upTo)
		}
	}
}

// TestPaid: what a completion settles of an item's debt, and whether its
// misfire node and the wait for its mark go with it.
func TestPaid(t *testing.T) {
	for _, c := range []struct {
		name      string
		since     time.Time // the debt, through last (zero: none)
		last      time.Time
		r         Ran
		cut       bool      // the run was cut short
		owedAfter time.Time // zero: settled
		nodeGone  bool
	}{
		{"a make-up run through the debt settles it", at(7), at(9), Ran{Kind: Misfire, Fire: at(7), Through: at(10)}, false, time.Time{}, true},
		{"a make-up run through part of it pays its start, and its node stays", at(7), at(12), Ran{Kind: Misfire, Fire: at(7), Through: at(10)}, false, at(11), false},
		{"a fire after the debt's start pays nothing", at(7), at(7), Ran{Kind: Fire, Fire: at(10)}, false, at(7), false},
		{"a fire of the debt's own start pays it", at(10), at(10), Ran{Kind: Fire, Fire: at(10)}, false, time.Time{}, true},
		{"a run cut short pays nothing", at(7), at(9), Ran{Kind: Misfire, Fire: at(7), Through: at(10)}, true, at(7), false},
	} {
		b, _ := testBook(&clock{at(10)}, 0)
		j := secondly(1)
		b.owed.owe(0, c.since)
		b.owed.owe(0, c.last)
		b.owed.SetNode(0, true)
		ended := false
		b.WaitRemote(0, func() { ended = true })
		noted := 0
		b.Paid(j, 1, func(i int) (Ran, bool) {
			noted++
			return c.r, !c.cut
		})
		since, owed := b.owed.Owed(0)
		if owed != !c.owedAfter.IsZero() || !since.Equal(c.owedAfter) {
			t.Errorf("%s: owed %v since %v, want since %v", c.name, owed, since, c.owedAfter)
		}
		if b.owed.HasNode(0) == c.nodeGone || ended != c.nodeGone {
			t.Errorf("%s: node kept %v, wait ended %v; want the node gone %v", c.name, b.owed.HasNode(0), ended, c.nodeGone)
		}
		if noted != 1 {
			t.Errorf("%s: run asked %d times", c.name, noted)
		}
	}
}

// TestMisfireNodeCovered: the misfire node goes with a completion only
// when this instance wrote it and the run covers the whole debt.
func TestMisfireNodeCovered(t *testing.T) {
	b, _ := testBook(&clock{at(10)}, 0)
	run := Ran{Item: 0, Kind: Misfire, Fire: at(7), Through: at(10)}
	b.owed.owe(0, at(8))
	if b.MisfireNodeCovered(run) {
		t.Error("a node this instance did not write goes with the completion")
	}
	b.owed.SetNode(0, true)
	if !b.MisfireNodeCovered(run) {
		t.Error("the node of a debt the run covers stays")
	}
	if b.MisfireNodeCovered(Ran{Item: 0, Kind: Fire, Fire: at(10)}) {
		t.Error("a fire after the debt's start takes its node")
	}
}

// TestNarrow: a make-up run runs the first stretch of fires its item's
// record does not list, and the next fire not listed stays owed.
func TestNarrow(t *testing.T) {
	sched := every(time.Second)
	recorded := fireplan.Cover{}.With(sched, at(8), at(8))
	b, _ := testBook(&clock{at(10)}, 0)
	busy(b, 0, at(6), at(10))
	first, last, rest, upTo := b.Narrow(secondly(1), 0, at(6), recorded)
	if !first.Equal(at(6)) || !last.Equal(at(7)) || !rest.Equal(at(9)) || !upTo.Equal(at(10)) {
		t.Fatalf("narrowed to %v..%v, rest %v, up to %v; want 6..7, rest 9, up to 10", first, last, rest, upTo)
	}
	if e := b.runs.running[0]; !e.through.Equal(at(7)) {
		t.Errorf("the run stands for fires through %v, want 7", e.through)
	}
	if since, owed := b.owed.Owed(0); !owed || !since.Equal(at(9)) {
		t.Errorf("owed since %v (%v), want 9", since, owed)
	}

	// With no schedule, the run stays as it is.
	b2, _ := testBook(&clock{at(10)}, 0)
	busy(b2, 0, at(6), at(10))
	first, last, rest, _ = b2.Narrow(Job{Items: 1}, 0, at(6), recorded)
	if !first.Equal(at(6)) || !last.Equal(at(10)) || !rest.IsZero() {
		t.Errorf("no schedule: narrowed to %v..%v, rest %v", first, last, rest)
	}
}

// TestAbsorbDebts: a make-up run takes over its items' earlier debts, and
// leaves the fires after it owed.
func TestAbsorbDebts(t *testing.T) {
	b, _ := testBook(&clock{at(10)}, 0)
	j := secondly(4)
	for _, it := range []int{0, 1, 2, 3} {
		busy(b, it, at(8), at(10))
	}
	b.owed.owe(0, at(5))  // earlier: the run starts there
	b.owed.owe(1, at(5))  // and through 12: 11 and 12 stay owed
	b.owed.owe(1, at(12)) //
	b.owed.owe(2, at(11)) // after the run: not its to pay
	fires := b.AbsorbDebts(j, []int{0, 1, 2, 3}, at(8))
	if want := map[int]time.Time{0: at(5), 1: at(5)}; len(fires) != len(want) || !fires[0].Equal(want[0]) || !fires[1].Equal(want[1]) {
		t.Errorf("runs start at %v, want %v", fires, want)
	}
	for _, c := range []struct {
		item  int
		since time.Time
	}{{0, time.Time{}}, {1, at(11)}, {2, at(11)}, {3, time.Time{}}} {
		since, _ := b.owed.Owed(c.item)
		if !since.Equal(c.since) {
			t.Errorf("item %d owed since %v, want %v", c.item, since, c.since)
		}
	}
}

// TestTakeDebts: the items owed a run are reserved as make-up runs in the
// step that takes their debts; busy, tried and waiting items are left.
func TestTakeDebts(t *testing.T) {
	b, _ := testBook(&clock{at(10)}, 0)
	sess := liveSession(t)
	j := secondly(5)
	if _, ok := b.TakeDebts(sess, j, map[int]bool{}, func() map[int]bool { return nil }); ok {
		t.Fatal("debts taken under a session the job is not registered under")
	}
	b.Registered(sess)
	for it := range 5 {
		b.owed.owe(it, at(7))
	}
	busy(b, 1, at(9), at(9))
	b.WaitRemote(2, func() {})
	tried := map[int]bool{3: true}
	debts, ok := b.TakeDebts(sess, j, tried, func() map[int]bool { return map[int]bool{4: true} })
	if !ok || len(debts) != 1 || !slices.Equal(debts[at(7)], []int{0}) {
		t.Fatalf("took %v (%v), want item 0 since 7", debts, ok)
	}
	if e := b.runs.running[0]; e == nil || !e.through.Equal(at(10)) {
		t.Errorf("item 0's make-up run is %+v, want one through 10", e)
	}
	for it, want := range map[int]bool{0: false, 1: true, 2: true, 3: true, 4: false} {
		if _, owed := b.owed.Owed(it); owed != want {
			t.Errorf("item %d owed %v after, want %v", it, owed, want)
		}
	}
	if !tried[0] || !tried[4] {
		t.Errorf("tried %v: the items taken are not marked", tried)
	}
	b.BeginStop()
	if _, ok := b.TakeDebts(sess, j, map[int]bool{}, func() map[int]bool { return nil }); ok {
		t.Error("debts taken once stop has begun")
	}
}

// liveSession returns a session whose lease never lapses.
func liveSession(t *testing.T) *regcenter.Session {
	k := regcenter.NewSessionKeeper(slog.New(slog.DiscardHandler), "test", liveLease{})
	t.Cleanup(func() { k.Close() })
	k.Established(1)
	return k.Current()
}

// liveLease is a lease clock that always proves its session live.
type liveLease struct{}

func (liveLease) LeaseLeft() time.Duration     { return time.Hour }
func (liveLease) SinceRead() time.Duration     { return 0 }
func (liveLease) LeaseDuration() time.Duration { return time.Hour }
func (liveLease) Backend() string              { return "test" }

// TestOwedRunsAndTheLeave: what a leave hands over, and what it leaves
// for once the runs have ended.
func TestOwedRunsAndTheLeave(t *testing.T) {
	b, _ := testBook(&clock{at(10)}, 0)
	j := secondly(5)
	b.owed.owe(0, at(6))
	b.owed.owe(4, at(6))        // disabled: not handed over
	b.owed.missWhileDown(at(8)) // every held item owes it
	b.owed.dispatch(2, at(10))  // item 2 took the fire at 10
	held, disabled := []int{1, 2, 3}, map[int]bool{4: true}
	owed := b.OwedRuns(j, held, at(10), disabled, false)
	want := []Owed{{0, at(6)}, {1, at(8)}, {2, at(8)}, {3, at(8)}}
	if !slices.Equal(owed, want) {
		t.Fatalf("owed %v, want %v", owed, want)
	}
	b.owed.takeMissed()
	if got, want := b.OwedRuns(j, held, at(10), disabled, false), []Owed{{0, at(6)}, {1, at(10)}, {3, at(10)}}; !slices.Equal(got, want) {
		t.Errorf("nothing missed while down: owed %v, want %v", got, want)
	}
	if got, want := b.OwedRuns(j, held, at(10), disabled, true), []Owed{{0, at(6)}}; !slices.Equal(got, want) {
		t.Errorf("paused: owed %v, want %v", got, want)
	}
	b.owed.missWhileDown(at(8))

	b.Left(held, owed)
	if !b.HeldAtLeaveAny() || !b.owed.MissedWhileDown().IsZero() {
		t.Fatalf("after the leave: held %v, missed %v", b.HeldAtLeaveAny(), b.owed.MissedWhileDown())
	}
	if _, owed := b.owed.Owed(0); owed {
		t.Error("a debt handed over is still owed here")
	}
	// A fire in flight notes a debt after the leave: it goes once the runs end.
	b.NoteMisfire(j, 3, at(11))
	if got, want := b.HandOverRest(j, disabled, false), []Owed{{3, at(11)}}; !slices.Equal(got, want) {
		t.Errorf("the rest handed over %v, want %v", got, want)
	}
	if !b.owed.Settled() {
		t.Error("debts left after the rest was handed over")
	}
}
