package failover

import (
	"reflect"
	"slices"
	"testing"
)

func TestClaimsKeepTheVersionRead(t *testing.T) {
	tests := []struct {
		name      string
		claim     map[int]int32 // claimed before
		unclaim   []int
		wantVer   map[int]int32 // ClaimVersion afterwards, by item
		wantDirty bool
	}{
		{name: "no claim: any version", wantVer: map[int]int32{0: -1}},
		{name: "a claim: its version", claim: map[int]int32{1: 4, 2: 0}, wantVer: map[int]int32{1: 4, 2: 0, 3: -1}},
		{
			name: "unclaimed: any version, the queue re-read", claim: map[int]int32{1: 4, 2: 7}, unclaim: []int{2},
			wantVer: map[int]int32{1: 4, 2: -1}, wantDirty: true,
		},
		{name: "unclaiming what was not claimed leaves the queue read", claim: map[int]int32{1: 4}, unclaim: []int{5}, wantVer: map[int]int32{1: 4, 5: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewState()
			for it, v := range tt.claim {
				c.Claimed(it, v)
			}
			c.Unclaim(tt.unclaim)
			for it, want := range tt.wantVer {
				if got := c.ClaimVersion(it); got != want {
					t.Errorf("ClaimVersion(%d) = %d, want %d", it, got, want)
				}
			}
			if got := c.Dirty(); got != tt.wantDirty {
				t.Errorf("Dirty = %v, want %v", got, tt.wantDirty)
			}
		})
	}
}

func TestDirtyIsWhatWasSetLast(t *testing.T) {
	for _, steps := range [][]bool{{}, {true}, {true, false}, {false, true}} {
		c := NewState()
		want := false
		for _, d := range steps {
			c.SetDirty(d)
			want = d
		}
		if got := c.Dirty(); got != want {
			t.Errorf("after SetDirty %v: Dirty = %v, want %v", steps, got, want)
		}
	}
}

func TestBlockedUntilUnblocked(t *testing.T) {
	tests := []struct {
		name    string
		block   []int
		unblock []int
		want    []int // blocked afterwards, of items 0 to 4
	}{
		{name: "none"},
		{name: "blocked", block: []int{1, 3}, want: []int{1, 3}},
		{name: "some unblocked", block: []int{1, 3}, unblock: []int{3, 4}, want: []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewState()
			for _, it := range tt.block {
				c.Block(it)
			}
			c.Unblock(tt.unblock)
			var got []int
			for it := range 5 {
				if c.IsBlocked(it) {
					got = append(got, it)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("blocked %v, want %v", got, tt.want)
			}
		})
	}
}

// watches is a registry's watches as WatchGone arms them: the gone
// function of each node watched, and the calls of each cancel.
type watches struct {
	armed     []string
	gone      map[string]func()
	cancelled map[string]int
	// during, if set, runs in the watch, before it returns its cancel.
	during func(p string, gone func())
}

func newWatches() *watches {
	return &watches{gone: map[string]func(){}, cancelled: map[string]int{}}
}

func (w *watches) watch(p string, gone func()) func() {
	w.armed = append(w.armed, p)
	w.gone[p] = gone
	if w.during != nil {
		w.during(p, gone)
	}
	return func() { w.cancelled[p]++ }
}

func TestWatchGoneUnblocksTheItemsWaiting(t *testing.T) {
	tests := []struct {
		name  string
		waits map[int]string // WatchGone(node, item) calls, by item (-1: none)
		gone  string         // the node that goes
		// Afterwards: the nodes watched, the items still blocked among
		// those waiting, the cancels called, and the watches left.
		wantArmed     []string
		wantBlocked   []int
		wantCancelled map[string]int
		wantLeft      int
	}{
		{
			name:      "one node, two items",
			waits:     map[int]string{1: "/a", 2: "/a"},
			gone:      "/a",
			wantArmed: []string{"/a"}, wantCancelled: map[string]int{"/a": 1},
		},
		{
			name:      "another node goes",
			waits:     map[int]string{1: "/a", 2: "/b"},
			gone:      "/b",
			wantArmed: []string{"/a", "/b"}, wantBlocked: []int{1}, wantCancelled: map[string]int{"/b": 1}, wantLeft: 1,
		},
		{
			name:      "a claim watched for no item",
			waits:     map[int]string{-1: "/claim"},
			gone:      "/claim",
			wantArmed: []string{"/claim"}, wantCancelled: map[string]int{"/claim": 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewState()
			w := newWatches()
			kicks := 0
			var items []int
			for it := range tt.waits {
				items = append(items, it)
			}
			slices.Sort(items)
			for _, it := range items {
				if it >= 0 {
					c.Block(it)
				}
				c.WatchGone(tt.waits[it], it, w.watch, func() { kicks++ })
			}
			if !reflect.DeepEqual(w.armed, tt.wantArmed) {
				t.Fatalf("armed %v, want %v", w.armed, tt.wantArmed)
			}
			if kicks != 0 || c.Dirty() {
				t.Fatal("kicked or marked dirty before any node went")
			}
			w.gone[tt.gone]()
			if kicks != 1 || !c.Dirty() {
				t.Errorf("after the node went: %d kicks, dirty %v; want 1, true", kicks, c.Dirty())
			}
			var blocked []int
			for _, it := range items {
				if c.IsBlocked(it) {
					blocked = append(blocked, it)
				}
			}
			if !slices.Equal(blocked, tt.wantBlocked) {
				t.Errorf("blocked %v, want %v", blocked, tt.wantBlocked)
			}
			if !reflect.DeepEqual(w.cancelled, tt.wantCancelled) {
				t.Errorf("cancelled %v, want %v", w.cancelled, tt.wantCancelled)
			}
			if left := c.Close(); len(left) != tt.wantLeft {
				t.Errorf("Close returned %d cancels, want %d", len(left), tt.wantLeft)
			}
		})
	}
}

// A node watched already is not watched twice; one that goes while its
// watch is being armed has that watch cancelled; once closed, nothing is
// watched, and Close hands over every watch's cancel.
func TestWatchGoneArmsOneWatchPerNodeUntilClosed(t *testing.T) {
	c := NewState()
	w := newWatches()
	kick := func() {}
	c.WatchGone("/a", 1, w.watch, kick)
	c.WatchGone("/a", 2, w.watch, kick)
	c.WatchGone("/a", 2, w.watch, kick)
	if !slices.Equal(w.armed, []string{"/a"}) {
		t.Errorf("armed %v, want one watch of /a", w.armed)
	}

	w.during = func(_ string, gone func()) { gone() } // gone before the watch returns
	c.WatchGone("/b", 3, w.watch, kick)
	if w.cancelled["/b"] != 1 {
		t.Errorf("the watch of a node gone while armed was cancelled %d times, want 1", w.cancelled["/b"])
	}
	w.during = func(string, func()) { c.Close() } // closed while the watch is armed
	c.WatchGone("/c", 4, w.watch, kick)
	if w.cancelled["/c"] != 1 {
		t.Errorf("the watch armed while closing was cancelled %d times, want 1", w.cancelled["/c"])
	}
	w.during = nil

	c.WatchGone("/d", 5, w.watch, kick)
	if slices.Contains(w.armed, "/d") {
		t.Error("a node was watched after Close")
	}
	if left := c.Close(); len(left) != 0 {
		t.Errorf("a second Close returned %d cancels", len(left))
	}

	c = NewState()
	w = newWatches()
	c.WatchGone("/a", 1, w.watch, kick)
	c.WatchGone("/b", -1, w.watch, kick)
	left := c.Close()
	for _, cancel := range left {
		cancel()
	}
	if len(left) != 2 || w.cancelled["/a"] != 1 || w.cancelled["/b"] != 1 {
		t.Errorf("Close returned %d cancels, cancelling %v; want both watches'", len(left), w.cancelled)
	}
}
