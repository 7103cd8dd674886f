package placement

import (
	"context"
	"errors"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// ReadItems reads an item list node (a server's assignment, a job's
// unplaced items); missing or garbage is none.
func ReadItems(ctx context.Context, rc regcenter.Center, path string) ([]int, error) {
	items, _, err := ReadItemsVersion(ctx, rc, path)
	return items, err
}

// ReadItemsVersion is ReadItems with the node's version (-1: no node).
func ReadItemsVersion(ctx context.Context, rc regcenter.Center, path string) ([]int, int32, error) {
	data, st, err := rc.Get(ctx, path)
	if errors.Is(err, regcenter.ErrNoNode) {
		return nil, -1, nil
	}
	if err != nil {
		return nil, 0, err
	}
	items, version := ItemsOf(regcenter.NodeData{Exists: true, Data: data, Stat: st})
	return items, version, nil
}

// ItemsOf is ReadItemsVersion for a node read with others
// (regcenter.Center.GetMany): its items, missing or garbage none, and its
// version (-1: no node).
func ItemsOf(nd regcenter.NodeData) ([]int, int32) {
	if !nd.Exists {
		return nil, -1
	}
	items, err := layout.ParseItems(string(nd.Data))
	if err != nil {
		return nil, nd.Stat.Version // counted as none; the job's own reshard repairs it
	}
	return items, nd.Stat.Version
}
