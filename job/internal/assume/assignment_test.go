package assume

import (
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

// TestHeldSince: which items an instance held without a break between two
// reads of its assignment.
func TestHeldSince(t *testing.T) {
	s1, s2 := &regcenter.Session{}, &regcenter.Session{}
	prev := Assignment{Sess: s1, Items: []int{0, 1, 2}, Shard: 4, ShardZxid: 9, ShardSeen: true, Set: true}
	at := func(items []int, version int32, zxid int64, sess *regcenter.Session) Assignment {
		return Assignment{Sess: sess, Items: items, Shard: version, ShardZxid: zxid, ShardSeen: true, Set: true}
	}
	for _, tc := range []struct {
		name string
		now  Assignment
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
			p = Assignment{}
		}
		got := tc.now.HeldSince(p)
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

// TestCacheAssumesOnlyWhatNoEventAnswered: an assumption is stored only
// when no watch event came during its read, is proved by watches only
// once they answered, and is the caller's to change.
func TestCacheAssumesOnlyWhatNoEventAnswered(t *testing.T) {
	s1, s2 := &regcenter.Session{}, &regcenter.Session{}
	var c Cache
	idleArms, epochArms := 0, 0
	armIdle := func() func() { idleArms++; return func() {} }
	armEpoch := func() func() { epochArms++; return func() {} }
	a := Assignment{Sess: s1, Items: []int{1, 2}, Set: true}

	gen := c.WatchGen()
	if _, relead := c.Assume(a, gen, true, armIdle, armEpoch); relead {
		t.Fatal("an assumption not proved by watches asked for a new lead")
	}
	got, ok := c.Assumed(s1)
	if !ok || got.Watched || len(got.Items) != 2 {
		t.Fatalf("Assumed = %+v, %v; want the items, not watched", got, ok)
	}
	got.Items[0] = 99
	if again, _ := c.Assumed(s1); again.Items[0] != 1 {
		t.Fatal("the caller's change reached the cache")
	}
	if _, ok := c.Assumed(s2); ok {
		t.Fatal("an assumption made under one session served another")
	}

	// The watches answer: the assumption goes; one read after is proved by them.
	if relead, passed := c.IdleEvent(); relead || passed {
		t.Fatalf("IdleEvent = %v, %v; want false, false", relead, passed)
	}
	c.EpochEvent()
	if _, ok := c.Assumed(s1); ok {
		t.Fatal("an assumption survived its watch's event")
	}
	gen = c.WatchGen()
	if _, relead := c.Assume(a, gen, true, armIdle, armEpoch); !relead {
		t.Fatal("an assumption proved by watches did not ask for a new lead")
	}
	if !c.WatchedAssumption() || idleArms != 1 || epochArms != 1 {
		t.Fatalf("watched %v, arms %d/%d; want true, 1/1", c.WatchedAssumption(), idleArms, epochArms)
	}

	// An event during a read: nothing stored.
	gen = c.WatchGen()
	c.NotePass(time.Unix(10, 0))
	if _, passed := c.IdleEvent(); !passed {
		t.Fatal("an idle pass was not reported")
	}
	c.Assume(a, gen, false, armIdle, armEpoch)
	if _, ok := c.Assumed(s1); ok {
		t.Fatal("a read an event answered was stored")
	}
	if at := c.TakePass(); !at.Equal(time.Unix(10, 0)) || !c.TakePass().IsZero() {
		t.Fatal("TakePass does not return the pass once")
	}

	// After Close nothing is stored and every watch made is handed back.
	cancels := c.Close()
	if len(cancels) != 2 {
		t.Fatalf("Close handed back %d cancels, want 2", len(cancels))
	}
	c.Assume(Assignment{Sess: s1, Set: true}, c.WatchGen(), true, armIdle, armEpoch)
	if _, ok := c.Assumed(s1); ok || idleArms != 1 {
		t.Fatal("a closed cache assumed or watched")
	}
}

// TestKeepAssignedKeepsOnlyTheAssumedItems: held narrows to the items the
// next fire may assume, small sets and large alike.
func TestKeepAssignedKeepsOnlyTheAssumedItems(t *testing.T) {
	s1 := &regcenter.Session{}
	var c Cache
	items := make([]int, 20)
	for i := range items {
		items[i] = 2 * i
	}
	c.Assume(Assignment{Sess: s1, Items: items, Set: true}, c.WatchGen(), false, func() func() { return func() {} }, nil)
	for _, n := range []int{3, 30} {
		held := map[int]bool{}
		for i := range n {
			held[i] = true
		}
		c.KeepAssigned(s1, held)
		for it := range held {
			if it%2 != 0 {
				t.Fatalf("n=%d: kept %d, not assigned", n, it)
			}
		}
		if want := (min(n, 40) + 1) / 2; len(held) != want {
			t.Fatalf("n=%d: kept %d items, want %d", n, len(held), want)
		}
	}
	held := map[int]bool{0: true}
	c.KeepAssigned(&regcenter.Session{}, held)
	if len(held) != 0 {
		t.Fatal("another session's fire kept items")
	}
}
