package book

import (
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/lazymap"
	"github.com/shardjob/shardjob/job/internal/fireplan"
)

// every is a schedule firing every d.
type every time.Duration

func (e every) Next(t time.Time) time.Time {
	d := time.Duration(e)
	return t.Truncate(d).Add(d)
}

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// at is the fire s seconds after t0.
func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// clock is a test clock: the book's Now.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

// testBook is a book on c's clock, with the scheduler's lead, for a job of
// items firing every second.
func testBook(c *clock, lead time.Duration) (*Book, *atomic.Int64) {
	n := new(atomic.Int64)
	return New(NewLedger(), Options{Log: slog.New(slog.DiscardHandler), MisfiresOwed: n, Now: c.Now, Lead: lead, OnIdle: func() {}}), n
}

// secondly is a job of items firing every second, owing missed fires.
func secondly(items int) Job {
	return Job{Items: items, Overlap: fireplan.OverlapWait, Schedule: every(time.Second)}
}

// busy puts a run of item standing for first..through in b's runs.
func busy(b *Book, item int, first, through time.Time) *execution {
	e := &execution{item: item, fire: first, through: through}
	lazymap.Set(&b.runs.running, item, e)
	return e
}

// TestUndoPutsTheLedgerBack: a fire whose proof fails puts back every
// reservation and debt change it made, and keeps a debt noted since.
func TestUndoPutsTheLedgerBack(t *testing.T) {
	fire := at(10)
	b, _ := testBook(&clock{fire}, 0)
	j := secondly(4)
	earlier := fire.Add(-3 * time.Second)
	// Item 0 owes earlier fires, item 1 is busy with a run that does not
	// stand for at, items 2 and 3 are free.
	b.owed.owe(0, earlier)
	running := busy(b, 1, earlier, earlier)
	b.owed.dispatch(3, earlier)
	before := map[int]entry{}
	for it := range 4 {
		before[it] = b.owed.entry(it)
	}

	res := b.ReserveFire(j, []int{0, 1, 2, 3}, fire, nil, nil, nil)
	if len(res.Plain) != 2 || len(res.Debts[earlier]) != 1 {
		t.Fatalf("plain %v, debts %v: want items 2 and 3 plain, item 0 owed since %s", res.Plain, res.Debts, earlier)
	}
	if _, owed := b.owed.Owed(1); !owed {
		t.Fatal("the busy item owes no run for this fire")
	}
	// Meanwhile another fire notes a debt on item 2.
	b.NoteMisfire(j, 2, fire.Add(time.Second))

	b.Undo(res)
	if len(b.runs.running) != 1 || b.runs.running[1] != running {
		t.Errorf("running after undo: %v, want only the busy item", b.runs.running)
	}
	for _, it := range []int{0, 1, 3} {
		if got := b.owed.entry(it); got != before[it] {
			t.Errorf("item %d: ledger %+v after undo, want %+v", it, got, before[it])
		}
	}
	if since, owed := b.owed.Owed(2); !owed || !since.Equal(fire.Add(time.Second)) {
		t.Errorf("item 2: the debt noted meanwhile is gone (%v, %v)", since, owed)
	}
}

// TestBusyItemOwesEveryFireItsRunDoesNotStandFor: a make-up run since a
// fire its item's running execution stands for, through a later fire it
// does not, owes the item the fires after the execution's — from the
// first one, not from the last (the fires between were owed by nobody:
// a lost fire under a registry member that made a fire's proof time out).
func TestBusyItemOwesEveryFireItsRunDoesNotStandFor(t *testing.T) {
	now := at(10)
	c := &clock{now}
	b, _ := testBook(c, 0)
	j := secondly(2)
	t1 := now.Add(-4 * time.Second)
	// Item 0 runs a make-up run for t1 and the fire after it.
	busy(b, 0, t1, t1.Add(time.Second))
	// The fire skipped at t1 is made up now, through now.
	if todo := b.Reserve(j, []int{0, 1}, t1, now, Misfire, nil); len(todo) != 1 || todo[0] != 1 {
		t.Fatalf("reserved %v, want item 1 only", todo)
	}
	since, owed := b.owed.Owed(0)
	if want := t1.Add(2 * time.Second); !owed || !since.Equal(want) {
		t.Fatalf("item 0 owed since %v (%v), want %v: the first fire its run does not stand for", since, owed, want)
	}
	if last := b.owed.LastOwed(0); !last.Equal(now) {
		t.Fatalf("item 0 owed through %v, want %v", last, now)
	}

	// The same through a scheduled fire with an inherited gap.
	b2, _ := testBook(c, 0)
	busy(b2, 0, t1, t1.Add(time.Second))
	b2.ReserveFire(j, []int{0}, now, map[int]time.Time{0: t1}, nil, nil)
	if since, owed := b2.owed.Owed(0); !owed || !since.Equal(t1.Add(2*time.Second)) {
		t.Fatalf("gap: item 0 owed since %v (%v), want %v", since, owed, t1.Add(2*time.Second))
	}
}

// TestUndoOfTheLastReservationTellsTheInstanceItIsIdle: a fire whose proof
// failed frees its reservations as a release does, and the instance hears
// that nothing runs here any more — a drain waits for exactly that, and a
// drain's reshard is what makes the fire's proof fail.
func TestUndoOfTheLastReservationTellsTheInstanceItIsIdle(t *testing.T) {
	b, _ := testBook(&clock{at(10)}, 0)
	idle := 0
	b.onIdle = func() { idle++ }
	res := b.ReserveFire(secondly(2), []int{0, 1}, at(10), nil, nil, nil)
	if len(res.Plain) != 2 {
		t.Fatalf("reserved %v, want both items", res.Plain)
	}
	b.Undo(res)
	if b.RunningCount() != 0 {
		t.Fatalf("%d items still reserved after undo", b.RunningCount())
	}
	if idle != 1 {
		t.Fatalf("the instance heard %d times that it is idle, want once", idle)
	}
}

// TestAFireAMakeUpRunStoodForIsNotRunAgain: a make-up run reserved ahead
// of a fire stands for it; when that fire's trigger comes only after the
// make-up run has ended (a stalled machine), the fire is not run again as
// a plain fire. The fire after it runs as usual.
func TestAFireAMakeUpRunStoodForIsNotRunAgain(t *testing.T) {
	fire := at(10)
	c := &clock{fire.Add(300 * time.Millisecond)}
	b, _ := testBook(c, 0)
	j := secondly(1)
	earlier := fire.Add(-3 * time.Second)
	if todo := b.Reserve(j, []int{0}, earlier, fire, Misfire, nil); len(todo) != 1 {
		t.Fatalf("make-up run reserved %v, want item 0", todo)
	}
	if e := b.runs.running[0]; !e.span().StandsFor(fire) {
		t.Fatalf("the make-up run stands for %s..%s, not for the fire at %s", e.fire, e.through, fire)
	}
	b.Release([]int{0})

	res := b.ReserveFire(j, []int{0}, fire, nil, nil, nil)
	if len(res.Plain) != 0 || len(res.Debts) != 0 {
		t.Fatalf("the fire at %s the make-up run stood for runs again: plain %v, debts %v", fire, res.Plain, res.Debts)
	}
	next := fire.Add(time.Second)
	c.now = next
	if res := b.ReserveFire(j, []int{0}, next, nil, nil, nil); len(res.Plain) != 1 {
		t.Fatalf("the next fire reserved %v, want item 0 plain", res.Plain)
	}
}

// TestReserveFire: what a scheduled fire reserves of each item, and what
// it notes as owed, by what the book knows of it.
func TestReserveFire(t *testing.T) {
	fire := at(10)
	type want struct {
		plain   []int
		debts   map[time.Time][]int
		running []int     // items in the runs after it
		owed    time.Time // item 0's debt after it (zero: none)
		noted   int64     // debts noted
	}
	for _, c := range []struct {
		name     string
		j        Job
		items    []int // nil: item 0
		setup    func(b *Book)
		gaps     map[int]time.Time
		ran      map[int]bool
		disabled map[int]bool
		want     want
	}{
		{"a free item runs plain", secondly(1), nil, nil, nil, nil, nil,
			want{plain: []int{0}, running: []int{0}}},
		{"an item past the count is not the job's", secondly(1), []int{0, 1, -1}, nil, nil, nil, nil,
			want{plain: []int{0}, running: []int{0}}},
		{"a disabled item is kept out", secondly(1), nil, nil, nil, nil, map[int]bool{0: true},
			want{}},
		{"a debt becomes a make-up run since it", secondly(1), nil, func(b *Book) { b.owed.owe(0, at(7)) }, nil, nil, nil,
			want{debts: map[time.Time][]int{at(7): {0}}, running: []int{0}}},
		{"an inherited gap is a make-up run since it", secondly(1), nil, nil, map[int]time.Time{0: at(8)}, nil, nil,
			want{debts: map[time.Time][]int{at(8): {0}}, running: []int{0}}},
		{"ran on its previous owner: not reserved", secondly(1), nil, nil, nil, map[int]bool{0: true}, nil,
			want{}},
		{"a busy item owes this fire", secondly(1), nil, func(b *Book) { busy(b, 0, at(9), at(9)) }, nil, nil, nil,
			want{running: []int{0}, owed: fire, noted: 1}},
		{"a busy item whose run stands for this fire owes nothing", secondly(1), nil, func(b *Book) { busy(b, 0, at(8), at(11)) }, nil, nil, nil,
			want{running: []int{0}}},
		{"a busy item of a job that drops missed fires owes nothing", Job{Items: 1, SkipsMissed: true, Schedule: every(time.Second)}, nil,
			func(b *Book) { busy(b, 0, at(9), at(9)) }, nil, nil, nil,
			want{running: []int{0}}},
		{"a busy item runs alongside under OverlapAllow", Job{Items: 1, Overlap: fireplan.OverlapAllow, Schedule: every(time.Second)}, nil,
			func(b *Book) { busy(b, 0, at(9), at(9)) }, nil, nil, nil,
			want{plain: []int{0}, running: []int{0}}},
	} {
		b, noted := testBook(&clock{fire}, 0)
		if c.setup != nil {
			c.setup(b)
		}
		items := c.items
		if items == nil {
			items = []int{0}
		}
		res := b.ReserveFire(c.j, items, fire, c.gaps, c.ran, c.disabled)
		var running []int
		for it := range b.runs.running {
			running = append(running, it)
		}
		owed, _ := b.owed.Owed(0)
		got := want{plain: res.Plain, debts: res.Debts, running: running, owed: owed, noted: noted.Load()}
		if !slices.Equal(got.plain, c.want.plain) || !equalDebts(got.debts, c.want.debts) || !slices.Equal(got.running, c.want.running) ||
			!got.owed.Equal(c.want.owed) || got.noted != c.want.noted {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
		if b.owed.DispatchedAt(0).Before(fire) && c.disabled == nil {
			t.Errorf("%s: the fire is not dispatched for item 0 (%v)", c.name, b.owed.DispatchedAt(0))
		}
	}
}

func equalDebts(a, b map[time.Time][]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// TestReserve: what a run of each kind reserves of a free item and of a
// busy one, through which fire, and what the busy one owes.
func TestReserve(t *testing.T) {
	now := at(10).Add(600 * time.Millisecond)
	lead := time.Second // the fire at 11 is dispatched by now (half a second ahead)
	type want struct {
		todo    []int
		through time.Time // item 0's run's (when it is reserved)
		owed    time.Time // item 0's debt (zero: none)
	}
	for _, c := range []struct {
		name    string
		j       Job
		busy    bool
		kind    Kind
		at      time.Time
		through time.Time
		want    want
	}{
		{"a fire runs its own fire", secondly(1), false, Fire, at(10), time.Time{},
			want{todo: []int{0}, through: at(10)}},
		{"a trigger runs its own fire", secondly(1), false, Trigger, at(10), time.Time{},
			want{todo: []int{0}, through: at(10)}},
		{"a make-up run stands for the fires dispatched by now", secondly(1), false, Misfire, at(7), at(11),
			want{todo: []int{0}, through: at(11)}},
		{"a failover run stands for the fires come by now", secondly(1), false, Failover, at(7), time.Time{},
			want{todo: []int{0}, through: at(10)}},
		{"a busy item owes a fire", secondly(1), true, Fire, at(10), time.Time{},
			want{owed: at(10)}},
		{"a busy item owes a make-up run's fires", secondly(1), true, Misfire, at(10), at(11),
			want{owed: at(10)}},
		{"a busy item leaves a failover debt queued", secondly(1), true, Failover, at(10), time.Time{},
			want{}},
		{"a busy item runs a trigger alongside under OverlapAllow", Job{Items: 1, Overlap: fireplan.OverlapAllow, Schedule: every(time.Second)}, true, Trigger, at(10), time.Time{},
			want{todo: []int{0}}},
		{"but not a failover run", Job{Items: 1, Overlap: fireplan.OverlapAllow, Schedule: every(time.Second)}, true, Failover, at(10), time.Time{},
			want{}},
	} {
		b, _ := testBook(&clock{now}, lead)
		if c.busy {
			busy(b, 0, at(5), at(5))
		}
		todo := b.Reserve(c.j, []int{0, 1}, c.at, c.through, c.kind, map[int]bool{1: true})
		got := want{todo: todo}
		if !c.busy && len(todo) > 0 {
			got.through = b.runs.running[0].through
		}
		got.owed, _ = b.owed.Owed(0)
		if !slices.Equal(got.todo, c.want.todo) || !got.through.Equal(c.want.through) || !got.owed.Equal(c.want.owed) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

// TestRunsAlongsideAreCounted: under OverlapAllow an item stays reserved
// while any of its runs goes on, and the book is idle only once the last
// of them is released.
func TestRunsAlongsideAreCounted(t *testing.T) {
	b, _ := testBook(&clock{at(10)}, 0)
	idle := 0
	b.onIdle = func() { idle++ }
	j := Job{Items: 1, Overlap: fireplan.OverlapAllow, Schedule: every(time.Second)}
	b.ReserveFire(j, []int{0}, at(8), nil, nil, nil)
	b.ReserveFire(j, []int{0}, at(9), nil, nil, nil)
	if todo := b.Reserve(j, []int{0}, at(10), time.Time{}, Trigger, nil); len(todo) != 1 {
		t.Fatalf("a trigger beside the runs reserved %v", todo)
	}
	for n := 3; n > 0; n-- {
		if !b.IsRunning(0) {
			t.Fatalf("with %d runs left the item is not reserved", n)
		}
		gone, _, _ := b.Release([]int{0})
		if gone != (n == 1) {
			t.Fatalf("with %d runs left, release said idle %v", n, gone)
		}
	}
	if b.IsRunning(0) || idle != 1 {
		t.Fatalf("after the last release: running %v, idle told %d times", b.IsRunning(0), idle)
	}
}

// TestUndoOfARunAlongside: a fire whose proof failed gives back its run
// beside the item's, and leaves the item's own run reserved.
func TestUndoOfARunAlongside(t *testing.T) {
	b, _ := testBook(&clock{at(10)}, 0)
	j := Job{Items: 1, Overlap: fireplan.OverlapAllow, Schedule: every(time.Second)}
	first := b.ReserveFire(j, []int{0}, at(9), nil, nil, nil)
	second := b.ReserveFire(j, []int{0}, at(10), nil, nil, nil)
	b.Undo(second)
	if b.runs.alongside[0] != 0 || !b.IsRunning(0) {
		t.Fatalf("after undoing the run alongside: %d alongside, running %v", b.runs.alongside[0], b.IsRunning(0))
	}
	b.Undo(first)
	if b.IsRunning(0) {
		t.Fatal("the item's own run is still reserved after its undo")
	}
}

// TestRelease: what a release reports, and the trigger queued meanwhile.
func TestRelease(t *testing.T) {
	b, _ := testBook(&clock{at(10)}, 0)
	j := secondly(2)
	b.ReserveFire(j, []int{0, 1}, at(10), nil, nil, nil)
	if !b.QueueTriggerIfBusy() {
		t.Fatal("a trigger was not queued while items ran")
	}
	// A fire finds item 1 busy: it is owed a run.
	b.ReserveFire(j, []int{1}, at(11), nil, nil, nil)
	for _, c := range []struct {
		items               []int
		idle, owed, trigger bool
	}{
		{[]int{0}, false, false, false},
		{[]int{1}, true, true, true},
	} {
		idle, owed, trigger := b.Release(c.items)
		if idle != c.idle || owed != c.owed || trigger != c.trigger {
			t.Errorf("release %v: idle %v owed %v trigger %v, want %v %v %v", c.items, idle, owed, trigger, c.idle, c.owed, c.trigger)
		}
	}
	if b.QueueTriggerIfBusy() {
		t.Error("a trigger was queued with nothing running")
	}
	if _, _, trigger := b.Release(nil); trigger {
		t.Error("the queued trigger was run twice")
	}
}
