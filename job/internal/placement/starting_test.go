package placement

import (
	"fmt"
	"testing"

	"github.com/shardjob/shardjob/sharding"
)

// TestCapsLeaveOutAStartingInstanceThatHasNotRegisteredTheJob: a fleet
// started at once. The first instance has registered every job, the two
// others are starting and have registered none. Counted, they would cap
// the first at 1 + K/2 and leave half the jobs' items unplaced; left out,
// the first takes every job whole. Once one of them has registered the
// job, or has started, it counts again and the caps bind.
func TestCapsLeaveOutAStartingInstanceThatHasNotRegisteredTheJob(t *testing.T) {
	const jobs = 40
	place := func(view View, servers []string) (placed, unplaced int) {
		tab := newTable()
		for j := range jobs {
			req := &Request{Job: fmt.Sprintf("j%d", j), Total: 1, Strategy: sharding.Balanced, Servers: servers}
			assign, out, err := placeJob(req, tab, view)
			if err != nil {
				t.Fatal(err)
			}
			tab.set(req.Job, unitsOf(assign, out))
			placed += len(assign["a"]) + len(assign["b"]) + len(assign["c"])
			unplaced += len(out)
		}
		return placed, unplaced
	}
	inst := func(starting bool) Instance { return Instance{FaultTolerance: 1, Starting: starting} }

	joining := View{Instances: map[string]Instance{"a": inst(false), "b": inst(true), "c": inst(true)}}
	if placed, unplaced := place(joining, []string{"a"}); placed != jobs || unplaced != 0 {
		t.Fatalf("b and c starting, a alone registered: %d placed, %d unplaced; want every item placed", placed, unplaced)
	}

	started := View{Instances: map[string]Instance{"a": inst(false), "b": inst(false), "c": inst(false)}}
	if placed, unplaced := place(started, []string{"a"}); unplaced == 0 || placed+unplaced != jobs {
		t.Fatalf("b and c started, a alone registered: %d placed, %d unplaced; want the caps to bind (a capped at 1 + K/2)", placed, unplaced)
	}

	registered := View{Instances: map[string]Instance{"a": inst(false), "b": inst(true), "c": inst(false)}}
	if placed, unplaced := place(registered, []string{"a", "b", "c"}); placed != jobs || unplaced != 0 {
		t.Fatalf("every instance registered, b still starting: %d placed, %d unplaced; want every item placed", placed, unplaced)
	}
}
