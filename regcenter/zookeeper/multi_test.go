package zookeeper

import (
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/internal/backend"
)

// TestMultiRequestsMatchOps checks the requests a transaction becomes: one
// per op, in order, of the op's kind, with its full path and fields, though
// requests of a kind share one allocation and paths one string.
func TestMultiRequestsMatchOps(t *testing.T) {
	z := &Center{root: "/ns", acl: zk.WorldACL(zk.PermAll)}
	ops := []regcenter.Op{
		regcenter.CheckOp{Path: "/job/leader/sharding", Version: 3},
		regcenter.CreateOp{Path: "/job/execution/0/running", Data: []byte(`{"a":1}`), Mode: regcenter.Ephemeral},
		regcenter.DeleteOp{Path: "job/execution/1/running", Version: -1},
		regcenter.SetOp{Path: "/job/execution/1/completed", Data: []byte("x"), Version: 7},
		regcenter.CreateOp{Path: "/", Mode: regcenter.Persistent},
		regcenter.CheckOp{Path: "", Version: 0},
		regcenter.CreateOp{Path: "/job/execution/2/running", Data: []byte("y"), Mode: regcenter.EphemeralSequential},
	}
	reqs, err := z.multiRequests(ops)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != len(ops) {
		t.Fatalf("%d requests for %d ops", len(reqs), len(ops))
	}
	for i, op := range ops {
		full := z.full(backend.OpPath(op))
		switch o := op.(type) {
		case regcenter.CreateOp:
			r, ok := reqs[i].(*zk.CreateRequest)
			if !ok || r.Path != full || string(r.Data) != string(o.Data) || r.Flags != flags(o.Mode) || len(r.Acl) != 1 {
				t.Errorf("op %d %v: request %#v", i, op, reqs[i])
			}
		case regcenter.SetOp:
			r, ok := reqs[i].(*zk.SetDataRequest)
			if !ok || r.Path != full || string(r.Data) != string(o.Data) || r.Version != o.Version {
				t.Errorf("op %d %v: request %#v", i, op, reqs[i])
			}
		case regcenter.DeleteOp:
			r, ok := reqs[i].(*zk.DeleteRequest)
			if !ok || r.Path != full || r.Version != o.Version {
				t.Errorf("op %d %v: request %#v", i, op, reqs[i])
			}
		case regcenter.CheckOp:
			r, ok := reqs[i].(*zk.CheckVersionRequest)
			if !ok || r.Path != full || r.Version != o.Version {
				t.Errorf("op %d %v: request %#v", i, op, reqs[i])
			}
		}
	}
	if _, err := z.multiRequests([]regcenter.Op{regcenter.CheckOp{Path: "/a"}, nil}); err == nil {
		t.Error("an unknown op was accepted")
	}
}
