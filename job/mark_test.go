package job

import "testing"

// TestOpItemFindsTheItemOfAnOp checks the map from a marking transaction's
// operations back to its items: a record check, when the item has a known
// record, then the item's mark.
func TestOpItemFindsTheItemOfAnOp(t *testing.T) {
	items := []int{4, 7, 9, 12}
	records := map[int]record{7: {}, 12: {}}
	// ops: create 4, check 7, create 7, create 9, check 12, create 12
	want := []int{0, 1, 1, 2, 3, 3}
	for k, w := range want {
		if got := opItem(items, records, k); got != w {
			t.Errorf("op %d: item index %d, want %d", k, got, w)
		}
	}
	for k := range items {
		if got := opItem(items, nil, k); got != k {
			t.Errorf("no records, op %d: item index %d, want %d", k, got, k)
		}
	}
}
