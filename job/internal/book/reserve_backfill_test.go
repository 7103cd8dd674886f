package book

import (
	"testing"
	"time"
)

// A backfill reserves a free item, not one running here (it tries again,
// owing nothing). An item the schedule owes a run it may take: the debt
// stays, run at its release (refusing it starved a backfill beside a
// schedule always a run behind).
func TestABackfillTakesNoBusyItem(t *testing.T) {
	c := &clock{now: at(10)}
	b, _ := testBook(c, 0)
	j := secondly(3)
	past, now := at(1), at(10)
	if got := b.Reserve(j, []int{0}, now, time.Time{}, Fire, nil); len(got) != 1 {
		t.Fatalf("the fire reserved %v", got)
	}
	b.NoteMisfire(j, 1, now)
	got := b.Reserve(j, []int{0, 1, 2}, past, time.Time{}, Backfill, nil)
	if len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("a backfill reserved %v, want the items not running, 1 and 2", got)
	}
	if _, owed := b.owed.Owed(1); !owed {
		t.Errorf("a backfill of an owed item paid its debt")
	}
	if _, owed := b.owed.Owed(0); owed {
		t.Errorf("a backfill that found item 0 running made it owe a run")
	}
}
