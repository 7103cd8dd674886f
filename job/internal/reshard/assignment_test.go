package reshard

import (
	"reflect"
	"testing"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

func TestOnlineIsLiveAndNotDisabled(t *testing.T) {
	s := Servers{
		"c": {layout.Status: true},
		"a": {layout.Status: true, layout.Sharding: true},
		"b": {layout.Status: true, layout.Disabled: true},
		"d": {layout.Sharding: true},
	}
	if got, want := s.Names(), []string{"a", "b", "c", "d"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Names = %v, want %v", got, want)
	}
	if got, want := s.Online(), []string{"a", "c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Online = %v, want %v", got, want)
	}
}

// A reshard's transaction writes over the versions read, removes an
// offline server that holds nothing but its assignment, empties that of a
// disabled one, and deletes its flags last.
func TestOpsWriteOverTheVersionsRead(t *testing.T) {
	paths := layout.Job("j")
	servers := Servers{
		"live":     {layout.Status: true, layout.Sharding: true},
		"new":      {layout.Status: true},
		"gone":     {layout.Sharding: true},
		"disabled": {layout.Status: true, layout.Disabled: true, layout.Sharding: true},
	}
	read := Assignment{
		Current:  map[string][]int{"live": {0}, "gone": {1}, "disabled": {2}},
		Versions: map[string]int32{"live": 4, "gone": 5, "disabled": 6},
		Unplaced: []int{3}, UnplacedVersion: 7,
	}
	fence := regcenter.CheckOp{Path: "/fence", Version: 1}
	ops := Ops(paths, servers, read, fence, []string{"/fake"})(map[string][]int{"live": {0, 1}, "new": {2, 3}}, nil)
	want := []regcenter.Op{
		fence,
		regcenter.DeleteOp{Path: "/fake", Version: -1},
		regcenter.SetOp{Path: paths.Flag("disabled", layout.Sharding), Data: nil, Version: 6},
		regcenter.DeleteOp{Path: paths.Flag("gone", layout.Sharding), Version: 5},
		regcenter.DeleteOp{Path: paths.Server("gone"), Version: -1},
		regcenter.SetOp{Path: paths.Flag("live", layout.Sharding), Data: []byte(layout.FormatItems([]int{0, 1})), Version: 4},
		regcenter.CreateOp{Path: paths.Flag("new", layout.Sharding), Data: []byte(layout.FormatItems([]int{2, 3}))},
		regcenter.DeleteOp{Path: paths.Unplaced(), Version: 7},
		regcenter.DeleteOp{Path: paths.Necessary(), Version: -1},
		regcenter.DeleteOp{Path: paths.Processing(), Version: -1},
	}
	if !reflect.DeepEqual(ops, want) {
		t.Errorf("Ops =\n%#v\nwant\n%#v", ops, want)
	}
}

// A node that holds what the reshard gives it, byte for byte, is checked
// at the version read rather than written, and so is a disabled server's
// node that is empty already; one whose bytes differ (other items, other
// spelling, garbage) is written.
func TestOpsCheckNodesThatHoldTheirItemsAlready(t *testing.T) {
	paths := layout.Job("j")
	on := map[string]bool{layout.Status: true, layout.Sharding: true}
	servers := Servers{
		"a-same": on, "b-moved": on, "c-garbage": on, "d-spelled": on,
		"e-idle": {layout.Status: true, layout.Disabled: true, layout.Sharding: true},
	}
	read := Assignment{
		Current:  map[string][]int{"a-same": {0, 1}, "b-moved": {2}, "d-spelled": {5}},
		Versions: map[string]int32{"a-same": 1, "b-moved": 2, "c-garbage": 3, "d-spelled": 4, "e-idle": 5},
		Data: map[string]string{"a-same": layout.FormatItems([]int{0, 1}), "b-moved": "2", "c-garbage": "x!",
			"d-spelled": " 5", "e-idle": ""},
		UnplacedVersion: -1,
	}
	fence := regcenter.CheckOp{Path: "/fence", Version: 1}
	ops := Ops(paths, servers, read, fence, nil)(map[string][]int{"a-same": {0, 1}, "b-moved": {3}, "c-garbage": {}, "d-spelled": {5}}, nil)
	want := []regcenter.Op{
		fence,
		regcenter.CheckOp{Path: paths.Flag("a-same", layout.Sharding), Version: 1},
		regcenter.SetOp{Path: paths.Flag("b-moved", layout.Sharding), Data: []byte("3"), Version: 2},
		regcenter.SetOp{Path: paths.Flag("c-garbage", layout.Sharding), Data: []byte(""), Version: 3},
		regcenter.SetOp{Path: paths.Flag("d-spelled", layout.Sharding), Data: []byte("5"), Version: 4},
		regcenter.CheckOp{Path: paths.Flag("e-idle", layout.Sharding), Version: 5},
		regcenter.DeleteOp{Path: paths.Necessary(), Version: -1},
		regcenter.DeleteOp{Path: paths.Processing(), Version: -1},
	}
	if !reflect.DeepEqual(ops, want) {
		t.Errorf("Ops =\n%#v\nwant\n%#v", ops, want)
	}
}
