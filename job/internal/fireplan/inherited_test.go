package fireplan

import (
	"slices"
	"testing"
	"time"
)

func TestGapSince(t *testing.T) {
	sec := every(time.Second)
	var zero time.Time
	for _, tc := range []struct {
		name               string
		before, done, debt time.Time
		want               time.Time
	}{
		{"never ran, nothing owed", at(10), zero, zero, zero},
		{"ran through the fire before", at(10), at(10), zero, zero},
		{"ran later than the fire before", at(10), at(11), zero, zero},
		{"stopped three fires back", at(10), at(7), zero, at(8)},
		{"a debt older than the record's gap", at(10), at(7), at(5), at(5)},
		{"a debt newer than the record's gap", at(10), at(7), at(9), at(8)},
		{"a debt alone", at(10), zero, at(6), at(6)},
		{"a debt of the fire before", at(10), at(10), at(10), at(10)},
		{"a debt after the fire before", at(10), zero, at(11), zero},
		{"a record caught up and a later debt", at(10), at(10), at(11), zero},
	} {
		if got := GapSince(sec, tc.before, tc.done, tc.debt); !got.Equal(tc.want) {
			t.Errorf("%s: GapSince(before %v, done %v, debt %v) = %v, want %v", tc.name, tc.before, tc.done, tc.debt, got, tc.want)
		}
	}
}

func TestRuns(t *testing.T) {
	same := func(int) time.Time { return at(1) }
	split := func(it int) time.Time {
		if it == 5 {
			return at(0) // a make-up run's item
		}
		return at(1)
	}
	for _, tc := range []struct {
		name   string
		items  []int
		fireOf func(int) time.Time
		want   []ItemRun
	}{
		{"none", nil, same, nil},
		{"one", []int{3}, same, []ItemRun{{3, 3, at(1)}}},
		{"unsorted, consecutive", []int{6, 4, 5}, same, []ItemRun{{4, 6, at(1)}}},
		{"a hole", []int{1, 2, 4}, same, []ItemRun{{1, 2, at(1)}, {4, 4, at(1)}}},
		{"another fire in the middle", []int{4, 5, 6}, split, []ItemRun{{4, 4, at(1)}, {5, 5, at(0)}, {6, 6, at(1)}}},
	} {
		in := slices.Clone(tc.items)
		got := Runs(tc.items, tc.fireOf)
		if !slices.EqualFunc(got, tc.want, func(a, b ItemRun) bool {
			return a.First == b.First && a.Last == b.Last && a.Fire.Equal(b.Fire)
		}) {
			t.Errorf("%s: Runs(%v) = %v, want %v", tc.name, tc.items, got, tc.want)
		}
		if !slices.Equal(in, tc.items) {
			t.Errorf("%s: Runs changed its argument to %v", tc.name, tc.items)
		}
	}
}
