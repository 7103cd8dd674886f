package reshard

import (
	"context"
	"maps"
	"slices"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/placement"
	"github.com/shardjob/shardjob/regcenter"
)

// Assignment is a job's assignment as its nodes say, with the versions
// read: what a reshard writes over and a repair fences on.
type Assignment struct {
	// Current is each server's items, by server with a sharding node.
	Current map[string][]int
	// Versions is the version read of each of those nodes, and Data what
	// each held.
	Versions map[string]int32
	Data     map[string]string
	// Unplaced is the items no server may take; UnplacedVersion the
	// version of their node, -1 when there is none.
	Unplaced        []int
	UnplacedVersion int32
}

// ReadAssignment reads the sharding node of every server of servers that
// has one, and the unplaced node, in one read of many nodes
// (regcenter.Center.GetMany). A server whose node went since servers was
// read loses its layout.Sharding mark in servers.
func ReadAssignment(ctx context.Context, rc regcenter.Center, paths layout.Job, servers Servers) (Assignment, error) {
	out := Assignment{Current: map[string][]int{}, Versions: map[string]int32{}, Data: map[string]string{}}
	var withNode, ps []string
	for _, sv := range servers.Names() {
		if servers[sv][layout.Sharding] {
			withNode = append(withNode, sv)
			ps = append(ps, paths.Flag(sv, layout.Sharding))
		}
	}
	nodes, err := rc.GetMany(ctx, append(ps, paths.Unplaced())...)
	if err != nil {
		return Assignment{}, err
	}
	for i, sv := range withNode {
		items, v := placement.ItemsOf(nodes[i])
		if v < 0 {
			// Gone since the server's children were read: the server
			// has no assignment node to write over.
			delete(servers[sv], layout.Sharding)
			continue
		}
		out.Current[sv], out.Versions[sv], out.Data[sv] = items, v, string(nodes[i].Data)
	}
	out.Unplaced, out.UnplacedVersion = placement.ItemsOf(nodes[len(withNode)])
	return out, nil
}

// Ops returns a reshard's part of its transaction (placement.Request.Ops)
// for the job's servers and its assignment read: the leader's fence; the
// fake status nodes (FakeStatuses) deleted; each server given items has
// its sharding node written, over the version read (checked at it, not
// written, when it holds them already); an offline server with nothing but
// its assignment is removed, so that entries of instances gone for good do
// not pile up, and any other server not given items has its assignment
// emptied (checked when empty already); the unplaced node written, made or
// deleted; and last the reshard's flags (necessary, processing) deleted.
func Ops(paths layout.Job, servers Servers, read Assignment, fence regcenter.Op, fakes []string) func(assign map[string][]int, unplaced []int) []regcenter.Op {
	versions, unplacedVersion := read.Versions, read.UnplacedVersion
	hadUnplaced := unplacedVersion >= 0
	return func(assign map[string][]int, unplaced []int) []regcenter.Op {
		ops := []regcenter.Op{fence}
		for _, p := range fakes {
			ops = append(ops, regcenter.DeleteOp{Path: p, Version: -1})
		}
		for _, sv := range servers.Names() {
			kids := servers[sv]
			shardPath := paths.Flag(sv, layout.Sharding)
			if items, ok := assign[sv]; ok {
				data := layout.FormatItems(items)
				switch had, known := read.Data[sv]; {
				case kids[layout.Sharding] && known && had == data:
					// Unchanged: checked, not written. Its version stays,
					// so its owner's assumption and its count of items
					// held throughout (assume.Assignment.HeldSince) survive
					// a reshard that moved none of them; the epoch, moved
					// by the reshard's flag, still has every fire read again.
					ops = append(ops, regcenter.CheckOp{Path: shardPath, Version: versions[sv]})
				case kids[layout.Sharding]:
					ops = append(ops, regcenter.SetOp{Path: shardPath, Data: []byte(data), Version: versions[sv]})
				default:
					ops = append(ops, regcenter.CreateOp{Path: shardPath, Data: []byte(data)})
				}
				continue
			}
			// Offline, disabled, draining. An offline server with nothing
			// but its assignment is removed, so that entries of instances
			// that are gone for good do not pile up.
			onlyAssignment := len(kids) == 0 || (len(kids) == 1 && kids[layout.Sharding])
			switch {
			case !kids[layout.Status] && onlyAssignment:
				if kids[layout.Sharding] {
					ops = append(ops, regcenter.DeleteOp{Path: shardPath, Version: versions[sv]})
				}
				ops = append(ops, regcenter.DeleteOp{Path: paths.Server(sv), Version: -1})
			case kids[layout.Sharding]:
				if had, known := read.Data[sv]; known && had == "" {
					ops = append(ops, regcenter.CheckOp{Path: shardPath, Version: versions[sv]}) // empty already
				} else {
					ops = append(ops, regcenter.SetOp{Path: shardPath, Data: nil, Version: versions[sv]})
				}
			}
		}
		switch data := []byte(layout.FormatItems(unplaced)); {
		case len(unplaced) > 0 && hadUnplaced:
			ops = append(ops, regcenter.SetOp{Path: paths.Unplaced(), Data: data, Version: unplacedVersion})
		case len(unplaced) > 0:
			ops = append(ops, regcenter.CreateOp{Path: paths.Unplaced(), Data: data})
		case hadUnplaced:
			ops = append(ops, regcenter.DeleteOp{Path: paths.Unplaced(), Version: unplacedVersion})
		}
		return append(ops,
			regcenter.DeleteOp{Path: paths.Necessary(), Version: -1},
			regcenter.DeleteOp{Path: paths.Processing(), Version: -1})
	}
}

// RepairRequest reads job's assignment nodes and what fences a repair of
// its entry in the load table on them: the reshard epoch, the reshard
// flag when raised, and every node read, each at the version read. Any
// instance may commit it, leader or not: every change to the nodes either
// sets a node that existed (checked at the version read) or is a reshard,
// which needs a reshard flag: one raised after the read moved the epoch
// (checked), and one already raised is deleted by the reshard (its node is
// checked at the version read). It is the repair placement.ReviewBooks
// takes.
func RepairRequest(ctx context.Context, rc regcenter.Center, job string) (*placement.Request, error) {
	paths := layout.Job(job)
	_, epoch, err := rc.Get(ctx, paths.ShardingEpoch())
	if err != nil {
		return nil, err
	}
	flagged, flag, err := rc.Exists(ctx, paths.Necessary())
	if err != nil {
		return nil, err
	}
	servers, err := ReadServers(ctx, rc, paths)
	if err != nil {
		return nil, err
	}
	read, err := ReadAssignment(ctx, rc, paths, servers)
	if err != nil {
		return nil, err
	}
	fence := []regcenter.Op{regcenter.CheckOp{Path: paths.ShardingEpoch(), Version: epoch.Version}}
	if flagged {
		fence = append(fence, regcenter.CheckOp{Path: paths.Necessary(), Version: flag.Version})
	}
	for _, sv := range slices.Sorted(maps.Keys(read.Versions)) {
		fence = append(fence, regcenter.CheckOp{Path: paths.Flag(sv, layout.Sharding), Version: read.Versions[sv]})
	}
	if read.UnplacedVersion >= 0 {
		fence = append(fence, regcenter.CheckOp{Path: paths.Unplaced(), Version: read.UnplacedVersion})
	}
	return &placement.Request{Job: job, Repair: true, Current: read.Current, Unplaced: read.Unplaced,
		Ops: func(map[string][]int, []int) []regcenter.Op { return fence }}, nil
}
