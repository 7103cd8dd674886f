package book

import (
	"testing"
	"time"
)

// A make-up run that cannot start (its item's mark held by a dead
// session's run) owes every fire it stood for, through the latest: a
// failover run of the first fires, settled, leaves the last owed. Noting
// only its first fire lost the fire it had taken over from the schedule
// (a PostgreSQL chaos run of 2026-12-04 lost it so).
func TestAMakeUpThatCannotStartOwesEveryFireItStoodFor(t *testing.T) {
	c := &clock{now: at(22).Add(500 * time.Millisecond)}
	b, _ := testBook(c, 500*time.Millisecond)
	j := secondly(1)
	if got := b.Reserve(j, []int{0}, at(19), time.Time{}, Misfire, nil); len(got) != 1 {
		t.Fatalf("the make-up reserved %v", got)
	}
	if through := b.LatestThrough(at(19), 0); !through.Equal(at(23)) {
		t.Fatalf("the make-up since 19 stands through %v, want 23 (dispatched with the lead)", through)
	}
	b.NoteUnrun(j, 0, at(19))
	b.Release([]int{0})
	// A failover run of fires 19 through 22 completes and pays them.
	b.Paid(j, 1, func(int) (Ran, bool) { return Ran{Item: 0, Kind: Failover, Fire: at(19), Through: at(22)}, true })
	since, owed := b.owed.Owed(0)
	if !owed || !since.Equal(at(23)) {
		t.Fatalf("after the failover run the item owes %v (%v), want fire 23", since, owed)
	}
}

// A catch-up owes the fire it let pass through, whatever gap its item's
// record shows before it: a failover run of the gap, in flight when the
// debt is noted, settles the gap and leaves the fire passed owed. Noted
// from the gap alone, the debt ended with the failover run, and the fire
// passed never ran (an etcd chaos run of 2026-12-05 lost it so).
func TestACatchUpOwesTheFireItPassedBeyondTheGap(t *testing.T) {
	c := &clock{now: at(22).Add(600 * time.Millisecond)}
	b, _ := testBook(c, 500*time.Millisecond)
	j := secondly(1)
	// The failover run of fires 18 through 22 is reserved, then the
	// reshard that gave the item lands after the fire at 23 passed.
	if got := b.Reserve(j, []int{0}, at(18), at(22), Failover, nil); len(got) != 1 {
		t.Fatalf("the failover run reserved %v", got)
	}
	b.NoteCatchUp(j, 0, at(23), at(18))
	b.Release([]int{0})
	b.Paid(j, 1, func(int) (Ran, bool) { return Ran{Item: 0, Kind: Failover, Fire: at(18), Through: at(22)}, true })
	since, owed := b.owed.Owed(0)
	if !owed || !since.Equal(at(23)) {
		t.Fatalf("after the failover run the item owes %v (%v), want fire 23", since, owed)
	}
}
