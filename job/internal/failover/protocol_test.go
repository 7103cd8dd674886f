package failover

import (
	"errors"
	"slices"
	"testing"

	"github.com/shardjob/shardjob/failover"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
)

const job = "j"

var paths = layout.Job(job)

// fenceNode is the node a test's fence checks, made at version 0.
const fenceNode = "/fence"

func TestReadDepartedReadsTheAssignmentWithItsVersion(t *testing.T) {
	tests := []struct {
		name        string
		data        *string // the sharding node's data; nil: no node
		sets        int     // times it is set again after its creation
		wantNoNode  bool
		wantItems   []int
		wantVersion int32
		wantGarbage bool
	}{
		{name: "no node", wantNoNode: true},
		{name: "items", data: new("0,2-4"), sets: 2, wantItems: []int{0, 2, 3, 4}, wantVersion: 2},
		{name: "none", data: new("")},
		{name: "garbage", data: new("two"), sets: 1, wantVersion: 1, wantGarbage: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, rc := center(t)
			p := paths.Flag("gone", layout.Sharding)
			if tt.data != nil {
				create(ctx, t, rc, p, []byte(*tt.data), regcenter.Persistent)
				for range tt.sets {
					if _, err := rc.Set(ctx, p, []byte(*tt.data), -1); err != nil {
						t.Fatal(err)
					}
				}
			}
			d, err := ReadDeparted(ctx, rc, paths, "gone")
			if got := errors.Is(err, regcenter.ErrNoNode); got != tt.wantNoNode || (err != nil && !got) {
				t.Fatalf("err = %v, want no node: %v", err, tt.wantNoNode)
			}
			if d.Path != p {
				t.Errorf("Path = %s, want %s", d.Path, p)
			}
			if !slices.Equal(d.Items, tt.wantItems) || d.Version != tt.wantVersion || (d.Garbage != nil) != tt.wantGarbage {
				t.Errorf("read %+v, want items %v at version %d, garbage %v", d, tt.wantItems, tt.wantVersion, tt.wantGarbage)
			}
		})
	}
}

func TestQueueDepartedQueuesOnceAndClears(t *testing.T) {
	entries := []failover.Entry{{Item: 1, Fire: 1000, From: "gone", MayHaveRun: 2000}, {Item: 4, Fire: 2000, From: "gone", MayHaveRun: 2000}}
	tests := []struct {
		name      string
		entries   []failover.Entry
		stale     bool   // the assignment changed after it was read
		fence     int32  // the fence's version checked (the node is at 0)
		wantErr   error  // nil: no error
		wantItems []int  // queued afterwards
		wantData  string // the assignment afterwards
	}{
		{name: "queued and cleared", entries: entries, wantItems: []int{1, 4}},
		{name: "nothing to redo: cleared"},
		{name: "queued already by another", entries: entries, stale: true, wantErr: regcenter.ErrBadVersion},
		{name: "no longer leading", entries: entries, fence: 3, wantErr: regcenter.ErrBadVersion, wantData: "1,4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, rc := center(t)
			create(ctx, t, rc, fenceNode, nil, regcenter.Persistent)
			create(ctx, t, rc, paths.Flag("gone", layout.Sharding), []byte("1,4"), regcenter.Persistent)
			d, err := ReadDeparted(ctx, rc, paths, "gone")
			if err != nil {
				t.Fatal(err)
			}
			if tt.stale {
				if _, err := rc.Set(ctx, d.Path, nil, d.Version); err != nil {
					t.Fatal(err)
				}
			}
			err = QueueDeparted(ctx, rc, job, d, tt.entries, regcenter.CheckOp{Path: fenceNode, Version: tt.fence})
			if (err == nil) != (tt.wantErr == nil) || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			items, err := failover.NewQueue(rc, job).Items(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(items, tt.wantItems) {
				t.Errorf("queued %v, want %v", items, tt.wantItems)
			}
			data, _, err := rc.Get(ctx, d.Path)
			if err != nil {
				t.Fatal(err)
			}
			if string(data) != tt.wantData {
				t.Errorf("assignment %q afterwards, want %q", data, tt.wantData)
			}
		})
	}
}

func TestWaitForIsTheRunnersStatusWhileItIsRegistered(t *testing.T) {
	const item = 3
	running := paths.ItemNode(item, layout.Running)
	tests := []struct {
		name       string
		mark       []byte // the running mark's data; nil: no mark
		registered bool   // the marking server's status node exists
		want       string
	}{
		{name: "no mark", want: running},
		{name: "marked here", mark: mark("me"), registered: true, want: running},
		{name: "marked by a registered instance", mark: mark("other"), registered: true, want: paths.Flag("other", layout.Status)},
		{name: "marked by an instance that left", mark: mark("other"), want: running},
		{name: "a mark that does not decode", mark: []byte("{"), registered: true, want: running},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, rc := center(t)
			if tt.mark != nil {
				create(ctx, t, rc, running, tt.mark, regcenter.Ephemeral)
			}
			if tt.registered {
				for _, sv := range []string{"me", "other"} {
					create(ctx, t, rc, paths.Flag(sv, layout.Status), nil, regcenter.Ephemeral)
				}
			}
			if got := WaitFor(ctx, rc, paths, item, "me"); got != tt.want {
				t.Errorf("WaitFor = %s, want %s", got, tt.want)
			}
		})
	}
}

// mark is the running mark of server.
func mark(server string) []byte {
	m := stored.Running{Server: server, Fire: 1000, Kind: "failover", Begin: 1000}
	return m.Marshal()
}

func TestHandBackDeletesTheClaimUnderTheFence(t *testing.T) {
	const item = 2
	claim := paths.ItemNode(item, layout.Failover)
	tests := []struct {
		name      string
		claimed   bool
		fence     int32 // the fence's version checked (the node is at 0)
		wantErr   bool
		wantClaim bool // the claim exists afterwards
	}{
		{name: "claimed", claimed: true},
		{name: "claim gone already"},
		{name: "no longer this session's", claimed: true, fence: 1, wantErr: true, wantClaim: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, rc := center(t)
			create(ctx, t, rc, fenceNode, nil, regcenter.Persistent)
			if tt.claimed {
				create(ctx, t, rc, claim, []byte("me"), regcenter.Ephemeral)
			}
			err := HandBack(ctx, rc, paths, item, regcenter.CheckOp{Path: fenceNode, Version: tt.fence})
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want one: %v", err, tt.wantErr)
			}
			ok, _, err := rc.Exists(ctx, claim)
			if err != nil {
				t.Fatal(err)
			}
			if ok != tt.wantClaim {
				t.Errorf("claim exists: %v, want %v", ok, tt.wantClaim)
			}
		})
	}
}
