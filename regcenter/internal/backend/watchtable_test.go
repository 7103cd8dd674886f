package backend

import (
	"testing"

	"github.com/shardjob/shardjob/regcenter"
)

// TestWatchTableSubscribers: a watch keeps its subscribers, however many,
// through removals in any order; it goes with its last one, and a
// removal run twice, or after the key's watch was made again, touches
// nothing else.
func TestWatchTableSubscribers(t *testing.T) {
	w := NewWatchTable[int]()
	key := WatchKey{Path: "/a", Kind: regcenter.WatchNode}
	got := map[int]int{}
	var subs []*WatchSub
	var cancels []func()
	var e *WatchEntry
	for i := range 3 {
		var s *WatchSub
		var c func()
		e, s, c = w.Subscribe(key, func(regcenter.Event) { got[i]++ })
		subs, cancels = append(subs, s), append(cancels, c)
	}
	if w.Count() != 1 {
		t.Fatalf("Count = %d; want one watch for its three subscribers", w.Count())
	}
	deliver := func() {
		w.Deliver(e, regcenter.Event{})
	}
	deliver()
	if got[0] != 1 || got[1] != 1 || got[2] != 1 {
		t.Fatalf("delivered %v; want each subscriber once", got)
	}
	cancels[0]() // the first, kept beside the others
	cancels[0]()
	deliver()
	if got[0] != 1 || got[1] != 2 || got[2] != 2 {
		t.Fatalf("delivered %v after the first left; want the two others", got)
	}
	w.DeliverTo(subs[0], e, regcenter.Event{})
	w.DeliverTo(subs[2], e, regcenter.Event{})
	if got[0] != 1 || got[2] != 3 {
		t.Fatalf("DeliverTo: %v; want only the live subscriber called", got)
	}
	cancels[2]()
	if w.Count() != 1 {
		t.Fatalf("Count = %d with a subscriber left; want 1", w.Count())
	}
	cancels[1]()
	if w.Count() != 0 || w.Entry(key) != nil {
		t.Fatalf("Count = %d after the last left; want the watch gone", w.Count())
	}
	// The key watched again: the old removals leave the new watch be.
	e2, _, c2 := w.Subscribe(key, func(regcenter.Event) {})
	for _, c := range cancels {
		c()
	}
	if w.Entry(key) != e2 {
		t.Fatal("an old subscription's removal took the key's new watch")
	}
	c2()
	if w.Count() != 0 {
		t.Fatalf("Count = %d; want 0", w.Count())
	}
}
