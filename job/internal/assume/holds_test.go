package assume

import (
	"slices"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

// TestHoldsAreOneSessions: the marks held belong to one session; a new
// session's marks start the set over, and a release under another session
// forgets them as stale.
func TestHoldsAreOneSessions(t *testing.T) {
	s1, s2 := &regcenter.Session{}, &regcenter.Session{}
	var h Holds
	h.Add(s1, []int{1, 2, 3})
	if !h.HoldsAll(s1, []int{1, 3}) || h.HoldsAll(s1, []int{1, 4}) || h.HoldsAll(s2, []int{1}) {
		t.Fatal("HoldsAll disagrees with what was added")
	}
	if got := h.HeldOf(s1, []int{2, 4}); len(got) != 1 || !got[2] {
		t.Fatalf("HeldOf = %v, want {2}", got)
	}
	if h.Count(s1) != 3 || h.Count(s2) != 0 {
		t.Fatal("Count disagrees with what was added")
	}
	h.Drop([]int{2})
	if got := h.Items(s1); len(got) != 2 || slices.Contains(got, 2) {
		t.Fatalf("Items = %v after a drop, want 2", got)
	}

	// A release gives up what give says, under the lock.
	var gone []int
	h.Release(s1, func(it int) bool { return it == 1 }, func(stale bool, g []int) {
		if stale {
			t.Fatal("a release of the holder's session called stale")
		}
		gone = g
	})
	if !slices.Equal(gone, []int{1}) || !h.HoldsAll(s1, []int{3}) || h.HoldsAll(s1, []int{1}) {
		t.Fatalf("released %v; holds 3 only: %v", gone, h.Items(s1))
	}
	called := false
	h.Release(s1, func(int) bool { return false }, func(bool, []int) { called = true })
	if called {
		t.Fatal("a release that gives up nothing called release")
	}

	// Another session's release: the marks are stale, forgotten.
	var stale bool
	h.Release(s2, func(int) bool { return true }, func(s bool, g []int) { stale = s && g == nil })
	if !stale || h.Count(s1) != 0 {
		t.Fatal("a release under another session did not forget the stale marks")
	}
	h.Add(s2, []int{7})
	if h.Count(s2) != 1 || h.Count(s1) != 0 {
		t.Fatal("a new session's marks did not start the set over")
	}
}

// TestInheritedKeepsTheLatestAndIsTakenOnce: a note keeps the latest
// fire, and is taken once.
func TestInheritedKeepsTheLatestAndIsTakenOnce(t *testing.T) {
	var h Inherited
	if h.Take([]int{1}) != nil {
		t.Fatal("an empty note gave something")
	}
	t1, t2 := time.Unix(100, 0), time.Unix(200, 0)
	h.Note(1, t2)
	h.Note(1, t1) // earlier: kept the latest
	h.Note(2, t1)
	got := h.Take([]int{1, 3})
	if len(got) != 1 || !got[1].Equal(t2) {
		t.Fatalf("Take = %v, want {1: %v}", got, t2)
	}
	if h.Take([]int{1}) != nil {
		t.Fatal("a note was taken twice")
	}
	if got := h.Take([]int{2}); !got[2].Equal(t1) {
		t.Fatalf("Take = %v, want {2: %v}", got, t1)
	}
}

// TestFailedAttemptsStayUntilTheRunOfTheirFire: a note of failed attempts
// is read by any run of its item and kept; only the run of its own fire,
// continuing the count, forgets it (read and forgotten by a run that
// could not use it, it was lost, and the fire's own run began its count
// over).
func TestFailedAttemptsStayUntilTheRunOfTheirFire(t *testing.T) {
	var h Inherited
	t10, t11 := time.Unix(10, 0), time.Unix(11, 0)
	if h.FailedOf([]int{4}) != nil {
		t.Fatal("an empty note gave something")
	}
	h.NoteFailed(4, t10, 1)
	h.NoteFailed(5, t11, 2)
	if got := h.FailedOf([]int{4, 6}); len(got) != 1 || got[4].N != 1 || !got[4].Fire.Equal(t10) {
		t.Fatalf("FailedOf = %v, want item 4's attempt of 10 s", got)
	}
	h.Continued(4, t11) // a run of another fire: the note stays
	if got := h.FailedOf([]int{4}); got[4].N != 1 {
		t.Fatalf("a run of 11 s spent item 4's note of 10 s: %v", got)
	}
	h.Continued(4, t10)
	if got := h.FailedOf([]int{4, 5}); len(got) != 1 || got[5].N != 2 {
		t.Fatalf("after the run of 10 s: %v, want only item 5's note", got)
	}
}
