package marks

import (
	"testing"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/records"
	"github.com/shardjob/shardjob/regcenter"
)

// TestMarkOpsSkipsHeldItemsAndMapsOpsToItems checks a marking
// transaction's operations and the map from them back to their items: a
// record check when the item has a known record, then the item's mark,
// unless this instance holds it already.
func TestMarkOpsSkipsHeldItemsAndMapsOpsToItems(t *testing.T) {
	paths := layout.Job("j")
	items := []int{4, 7, 9, 12}
	records := map[int]records.Record{7: {}, 12: {}}
	held := map[int]bool{9: true, 12: true}
	checks := []regcenter.Op{regcenter.CheckOp{Path: "/j/leader/sharding"}}
	ops, idx := markOps(paths, items, held, records, []byte("{}"), checks)
	// ops after the check: create 4, check 7, create 7, check 12
	wantIdx := []int{0, 1, 1, 3}
	wantPaths := []string{"/j/execution/4/running", "/j/execution/7/completed", "/j/execution/7/running", "/j/execution/12/completed"}
	if len(ops) != 1+len(wantIdx) || len(idx) != len(wantIdx) {
		t.Fatalf("%d ops, %d indexes; want %d and %d", len(ops), len(idx), 1+len(wantIdx), len(wantIdx))
	}
	for k, w := range wantIdx {
		if idx[k] != w {
			t.Errorf("op %d: item index %d, want %d", k, idx[k], w)
		}
		var p string
		switch op := ops[1+k].(type) {
		case regcenter.CreateOp:
			p = op.Path
		case regcenter.CheckOp:
			p = op.Path
		}
		if p != wantPaths[k] {
			t.Errorf("op %d: %q, want %q", k, p, wantPaths[k])
		}
	}
	if ops, _ := markOps(paths, []int{9}, held, nil, nil, nil); len(ops) != 0 {
		t.Errorf("a held item with nothing to check: %d ops, want none", len(ops))
	}
}
