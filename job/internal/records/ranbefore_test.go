package records

import (
	"maps"
	"slices"
	"testing"
)

// RanBefore sorts a fire's fresh items by their records as read: the ones
// that list the fire ran it, the versioned others are known, the ones with
// no record unrecorded; an item gained earlier whose record lists the fire
// ran it too.
func TestRanBefore(t *testing.T) {
	versioned := func(s int) Record { return Record{Cover: coverThrough(s), Version: 2, Versioned: true} }
	cases := []struct {
		name       string
		read       map[int]Record
		fresh      []int
		ran        []int
		known      []int
		unrecorded []int
	}{
		{name: "nothing read, nothing fresh"},
		{name: "fresh, not read: runs", fresh: []int{4}},
		{name: "its record lists the fire", read: map[int]Record{1: versioned(5)}, fresh: []int{1}, ran: []int{1}},
		{name: "its record ends before the fire", read: map[int]Record{2: versioned(3)}, fresh: []int{2}, known: []int{2}},
		{name: "no record", read: map[int]Record{3: {}}, fresh: []int{3}, unrecorded: []int{3}},
		{name: "gained earlier, its record lists the fire", read: map[int]Record{6: versioned(7)}, ran: []int{6}},
		{name: "gained earlier, its record ends before it", read: map[int]Record{6: versioned(4)}},
		{
			name: "all at once", read: map[int]Record{1: versioned(5), 2: versioned(3), 3: {}, 6: versioned(9)},
			fresh: []int{1, 2, 3, 4}, ran: []int{1, 6}, known: []int{2}, unrecorded: []int{3},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCache()
			for it, rec := range tc.read {
				c.Read(it, rec)
			}
			ran, known, unrecorded := c.RanBefore(everySecond{}, at(5), tc.fresh)
			if got := slices.Sorted(maps.Keys(ran)); !slices.Equal(got, tc.ran) {
				t.Errorf("ran %v, want %v", got, tc.ran)
			}
			if got := slices.Sorted(maps.Keys(known)); !slices.Equal(got, tc.known) {
				t.Errorf("known %v, want %v", got, tc.known)
			}
			if !slices.Equal(unrecorded, tc.unrecorded) {
				t.Errorf("unrecorded %v, want %v", unrecorded, tc.unrecorded)
			}
		})
	}
}

// Names: the holder of an item whose completions are journalled names its
// own journal; any other writer keeps another process's journal the node
// names, and names none otherwise.
func TestNames(t *testing.T) {
	rd := &Reader{Own: "mine"}
	cases := []struct {
		holds, journalled bool
		node, want        string
	}{
		{true, true, "", "mine"},
		{true, true, "theirs", "mine"},
		{true, false, "theirs", "theirs"},
		{false, true, "theirs", "theirs"},
		{false, false, "mine", ""},
		{true, false, "", ""},
		{false, false, "", ""},
	}
	for _, tc := range cases {
		if got := rd.Names(tc.holds, tc.journalled, tc.node); got != tc.want {
			t.Errorf("Names(holds %v, journalled %v, node %q) = %q, want %q", tc.holds, tc.journalled, tc.node, got, tc.want)
		}
	}
}
