package job

import (
	"testing"

	"github.com/shardjob/shardjob/regcenter"
)

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
