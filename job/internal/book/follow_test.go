package book

import (
	"testing"
	"time"

	"github.com/shardjob/shardjob/job/internal/fireplan"
)

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestNextFireFollowsARunWhoseCompletionIsWritten: a run that returned and
// whose completion is being written (Writing) does not make the item's next
// fire owe a make-up run: the fire runs plain, on time, and its completion
// waits for the first one's (After), released first.
func TestNextFireFollowsARunWhoseCompletionIsWritten(t *testing.T) {
	b, owed := testBook(&clock{at(2)}, 0)
	j := secondly(1)
	first := busy(b, 0, at(1), at(1))

	// Before its run returns, the next fire finds the item busy and owes it.
	res := b.ReserveFire(j, []int{0}, at(2), nil, nil, nil)
	if len(res.Plain) != 0 || owed.Load() != 1 {
		t.Fatalf("plain %v, debts noted %d: a fire meeting a run still going must owe", res.Plain, owed.Load())
	}
	b.Undo(res)

	b.Writing([]int{0}, []time.Time{at(1)})
	res = b.ReserveFire(j, []int{0}, at(2), nil, nil, nil)
	if len(res.Plain) != 1 || len(res.Debts) != 0 {
		t.Fatalf("plain %v, debts %v: the next fire must follow the run being written", res.Plain, res.Debts)
	}
	after := b.After(0, at(2))
	if after == nil || closed(after) {
		t.Fatal("the following run's completion has nothing to wait for")
	}
	if b.After(0, at(1)) != nil {
		t.Error("the written run's own completion waits for something")
	}
	// A third fire while the second runs owes: its run has not returned.
	third := b.ReserveFire(j, []int{0}, at(3), nil, nil, nil)
	if len(third.Plain) != 0 {
		t.Fatal("a third fire followed a run that had not returned")
	}
	b.Undo(third)

	// The first completion's release ends the wait, and keeps the item
	// reserved for the second run.
	if idle, _, _ := b.Release([]int{0}); idle || !closed(after) {
		t.Fatalf("after the first release: idle %v, wait ended %v; want busy, ended", idle, closed(after))
	}
	if !b.IsRunning(0) || b.runs.running[0] == first {
		t.Fatal("the first release freed the item, or gave it back to the written run")
	}
	if b.After(0, at(2)) != after {
		t.Error("the following run no longer knows what it waited for")
	}
	if idle, _, _ := b.Release([]int{0}); !idle {
		t.Fatal("the second release left the item reserved")
	}
	if b.followers.Load() != 0 {
		t.Errorf("followers %d after both releases", b.followers.Load())
	}
}

// TestFollowersChain: a run waiting for its item's previous completion
// (After) may be followed in turn once it returned (Writing); the releases
// end the waits in the order of the fires.
func TestFollowersChain(t *testing.T) {
	b, _ := testBook(&clock{at(3)}, 0)
	j := secondly(1)
	busy(b, 0, at(1), at(1))
	b.Writing([]int{0}, []time.Time{at(1)})
	if res := b.ReserveFire(j, []int{0}, at(2), nil, nil, nil); len(res.Plain) != 1 {
		t.Fatal("the second fire did not follow the first")
	}
	second := b.After(0, at(2))
	b.Writing([]int{0}, []time.Time{at(2)}) // returned, waiting for the first
	if res := b.ReserveFire(j, []int{0}, at(3), nil, nil, nil); len(res.Plain) != 1 {
		t.Fatal("the third fire did not follow the second, which had returned")
	}
	third := b.After(0, at(3))
	if third == nil || third == second {
		t.Fatal("the third run waits for nothing, or for the first")
	}
	b.Release([]int{0}) // the first completion
	if !closed(second) || closed(third) {
		t.Fatalf("after the first release: second's wait ended %v, third's %v; want true, false", closed(second), closed(third))
	}
	b.Release([]int{0}) // the second
	if !closed(third) {
		t.Fatal("the second release did not end the third's wait")
	}
	if idle, _, _ := b.Release([]int{0}); !idle || b.followers.Load() != 0 {
		t.Fatalf("after the third release: idle %v, followers %d", idle, b.followers.Load())
	}
}

// TestUndoOfAFollowGivesTheItemBack: a fire that followed a run being
// written and did not go ahead (its proof failed) gives the item back to
// that run, whose release then frees it.
func TestUndoOfAFollowGivesTheItemBack(t *testing.T) {
	b, _ := testBook(&clock{at(2)}, 0)
	j := secondly(1)
	first := busy(b, 0, at(1), at(1))
	b.Writing([]int{0}, []time.Time{at(1)})
	res := b.ReserveFire(j, []int{0}, at(2), nil, nil, nil)
	if len(res.Plain) != 1 {
		t.Fatal("the fire did not follow")
	}
	b.Undo(res)
	if b.runs.running[0] != first || b.followers.Load() != 0 {
		t.Fatalf("after undo: running %v, followers %d; want the written run back, none", b.runs.running[0], b.followers.Load())
	}
	if idle, _, _ := b.Release([]int{0}); !idle {
		t.Fatal("the written run's release left the item reserved")
	}
}

// TestFollowOnlyForAPlainFire: a fire that would not run plain were the
// item free — it owes earlier fires, the written run stands for it, or
// runs beside others anyway (OverlapAllow) — owes as before.
func TestFollowOnlyForAPlainFire(t *testing.T) {
	cases := []struct {
		name  string
		setup func(b *Book, j *Job)
	}{
		{"owes earlier fires", func(b *Book, _ *Job) { b.owed.owe(0, at(0)) }},
		{"the written run stands for it", func(b *Book, _ *Job) { b.runs.running[0].through = at(2) }},
		{"overlap allow", func(_ *Book, j *Job) { j.Overlap = fireplan.OverlapAllow }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := testBook(&clock{at(2)}, 0)
			j := secondly(1)
			busy(b, 0, at(1), at(1))
			tc.setup(b, &j)
			b.Writing([]int{0}, []time.Time{at(1)})
			res := b.ReserveFire(j, []int{0}, at(2), nil, nil, nil)
			if b.After(0, at(2)) != nil || b.followers.Load() != 0 {
				t.Fatalf("plain %v: the fire followed the written run", res.Plain)
			}
		})
	}
}
