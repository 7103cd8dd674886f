package job

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

// bookRunner is a runner with only what reservations use: its book and
// ledger, on s's clock.
func bookRunner(s *Scheduler) *runner {
	r := &runner{log: slog.New(slog.NewTextHandler(io.Discard, nil)), owed: newLedger(), s: s}
	r.book = newBook(r.owed, r.log, &r.counters.misfiresOwed, s.opts.now, s.opts.fireLead, func() {})
	return r
}

// TestUndoPutsTheLedgerBack: a fire whose proof fails puts back every
// reservation and debt change it made, and keeps a debt noted since.
func TestUndoPutsTheLedgerBack(t *testing.T) {
	r := bookRunner(&Scheduler{opts: options{now: time.Now}})
	cfg := compile(Config{Name: "u", Cron: "* * * * * *", ShardingTotalCount: 4}.WithDefaults())
	at := time.Now().Truncate(time.Second)
	earlier := at.Add(-3 * time.Second)
	// Item 0 owes earlier fires, item 1 is busy with a run that does not
	// stand for at, items 2 and 3 are free.
	r.owed.owe(0, earlier)
	busy := &execution{item: 1, fire: earlier, through: earlier}
	r.book.runs.running[1] = busy
	r.owed.dispatch(3, earlier)
	before := map[int]ledgerEntry{}
	for it := range 4 {
		before[it] = r.owed.entry(it)
	}

	res := r.reserveFire([]int{0, 1, 2, 3}, at, nil, nil, cfg)
	if len(res.plain) != 2 || len(res.debts[earlier]) != 1 {
		t.Fatalf("plain %v, debts %v: want items 2 and 3 plain, item 0 owed since %s", res.plain, res.debts, earlier)
	}
	if _, owed := r.owed.owed(1); !owed {
		t.Fatal("the busy item owes no run for this fire")
	}
	// Meanwhile another fire notes a debt on item 2.
	r.noteMisfire(2, at.Add(time.Second), cfg)

	r.undo(res)
	if len(r.book.runs.running) != 1 || r.book.runs.running[1] != busy {
		t.Errorf("running after undo: %v, want only the busy item", r.book.runs.running)
	}
	for _, it := range []int{0, 1, 3} {
		if got := r.owed.entry(it); got != before[it] {
			t.Errorf("item %d: ledger %+v after undo, want %+v", it, got, before[it])
		}
	}
	if since, owed := r.owed.owed(2); !owed || !since.Equal(at.Add(time.Second)) {
		t.Errorf("item 2: the debt noted meanwhile is gone (%v, %v)", since, owed)
	}
}

// TestBusyItemOwesEveryFireItsRunDoesNotStandFor: a make-up run since a
// fire its item's running execution stands for, through a later fire it
// does not, owes the item the fires after the execution's — from the
// first one, not from the last (the fires between were owed by nobody:
// a lost fire under a registry member that made a fire's proof time out).
func TestBusyItemOwesEveryFireItsRunDoesNotStandFor(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	r := bookRunner(&Scheduler{opts: options{now: func() time.Time { return now }}})
	cfg := compile(Config{Name: "u", Cron: "* * * * * *", ShardingTotalCount: 2}.WithDefaults())
	t1 := now.Add(-4 * time.Second)
	// Item 0 runs a make-up run for t1 and the fire after it.
	r.book.runs.running[0] = &execution{item: 0, fire: t1, through: t1.Add(time.Second), kind: KindMisfire}
	// The fire skipped at t1 is made up now, through now.
	if todo := r.reserve([]int{0, 1}, t1, now, KindMisfire, cfg); len(todo) != 1 || todo[0] != 1 {
		t.Fatalf("reserved %v, want item 1 only", todo)
	}
	since, owed := r.owed.owed(0)
	if want := t1.Add(2 * time.Second); !owed || !since.Equal(want) {
		t.Fatalf("item 0 owed since %v (%v), want %v: the first fire its run does not stand for", since, owed, want)
	}
	if last := r.owed.lastOwed(0); !last.Equal(now) {
		t.Fatalf("item 0 owed through %v, want %v", last, now)
	}

	// The same through a scheduled fire with an inherited gap.
	r2 := bookRunner(r.s)
	r2.book.runs.running[0] = &execution{item: 0, fire: t1, through: t1.Add(time.Second), kind: KindMisfire}
	r2.reserveFire([]int{0}, now, map[int]time.Time{0: t1}, nil, cfg)
	if since, owed := r2.owed.owed(0); !owed || !since.Equal(t1.Add(2*time.Second)) {
		t.Fatalf("gap: item 0 owed since %v (%v), want %v", since, owed, t1.Add(2*time.Second))
	}
}

// TestHeldSince: which items an instance held without a break between two
// reads of its assignment.
func TestHeldSince(t *testing.T) {
	s1, s2 := &regcenter.Session{}, &regcenter.Session{}
	prev := assigned{sess: s1, items: []int{0, 1, 2}, shard: 4, shardZxid: 9, shardSeen: true, set: true}
	at := func(items []int, version int32, zxid int64, sess *regcenter.Session) assigned {
		return assigned{sess: sess, items: items, shard: version, shardZxid: zxid, shardSeen: true, set: true}
	}
	for _, tc := range []struct {
		name string
		now  assigned
		want []int
	}{
		{"unchanged", at([]int{0, 1, 2}, 4, 9, s1), []int{0, 1, 2}},
		{"one reshard", at([]int{1, 2, 3}, 5, 9, s1), []int{1, 2}},
		{"two reshards", at([]int{0, 1, 2}, 6, 9, s1), nil},
		{"node made again", at([]int{0, 1, 2}, 4, 12, s1), nil},
		{"new session", at([]int{0, 1, 2}, 4, 9, s2), nil},
		{"no previous read", at([]int{0}, 0, 9, s1), nil},
	} {
		p := prev
		if tc.name == "no previous read" {
			p = assigned{}
		}
		got := tc.now.heldSince(p)
		if len(got) != len(tc.want) {
			t.Errorf("%s: held %v, want %v", tc.name, got, tc.want)
			continue
		}
		for _, it := range tc.want {
			if !got[it] {
				t.Errorf("%s: held %v, want %v", tc.name, got, tc.want)
			}
		}
	}
}

// TestUndoOfTheLastReservationTellsTheInstanceItIsIdle: a fire whose proof
// failed frees its reservations as a release does, and the instance hears
// that nothing runs here any more — a drain waits for exactly that, and a
// drain's reshard is what makes the fire's proof fail.
func TestUndoOfTheLastReservationTellsTheInstanceItIsIdle(t *testing.T) {
	r := bookRunner(&Scheduler{opts: options{now: time.Now}})
	idle := 0
	r.book.onIdle = func() { idle++ }
	cfg := compile(Config{Name: "u", Cron: "* * * * * *", ShardingTotalCount: 2}.WithDefaults())
	res := r.reserveFire([]int{0, 1}, time.Now().Truncate(time.Second), nil, nil, cfg)
	if len(res.plain) != 2 {
		t.Fatalf("reserved %v, want both items", res.plain)
	}
	r.undo(res)
	if r.runningCount() != 0 {
		t.Fatalf("%d items still reserved after undo", r.runningCount())
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
	at := time.Now().Truncate(time.Second)
	now := at.Add(300 * time.Millisecond)
	r := bookRunner(&Scheduler{opts: options{now: func() time.Time { return now }}})
	cfg := compile(Config{Name: "u", Cron: "* * * * * *", ShardingTotalCount: 1}.WithDefaults())
	earlier := at.Add(-3 * time.Second)
	if todo := r.reserve([]int{0}, earlier, at, KindMisfire, cfg); len(todo) != 1 {
		t.Fatalf("make-up run reserved %v, want item 0", todo)
	}
	if e := r.book.runs.running[0]; !e.standsFor(at) {
		t.Fatalf("the make-up run stands for %s..%s, not for the fire at %s", e.fire, e.through, at)
	}
	r.release([]int{0})

	res := r.reserveFire([]int{0}, at, nil, nil, cfg)
	if len(res.plain) != 0 || len(res.debts) != 0 {
		t.Fatalf("the fire at %s the make-up run stood for runs again: plain %v, debts %v", at, res.plain, res.debts)
	}
	next := at.Add(time.Second)
	now = next
	if res := r.reserveFire([]int{0}, next, nil, nil, cfg); len(res.plain) != 1 {
		t.Fatalf("the next fire reserved %v, want item 0 plain", res.plain)
	}
}
