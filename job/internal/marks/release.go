package marks

import (
	"context"
	"errors"
	"slices"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// DeleteHeld deletes the running marks of items, held under the session
// fence proves (its generation: a delete the client replays on a later
// session must not remove a mark another instance made meanwhile), in
// transactions of at most PerTxn deletes; a mark already gone is no
// error. It sorts items. On an error it returns the items of the transaction that failed
// and stops there: the marks left go with the session.
func DeleteHeld(ctx context.Context, rc regcenter.Center, paths layout.Job, fence regcenter.Op, items []int) ([]int, error) {
	slices.Sort(items)
	dels := make([]regcenter.DeleteOp, len(items))
	for i, it := range items {
		dels[i] = regcenter.DeleteOp{Path: paths.ItemNode(it, layout.Running), Version: -1}
	}
	if at, err := deleteFenced(ctx, rc, fence, dels, false); err != nil {
		return items[at:min(at+PerTxn, len(items))], err
	}
	return nil, nil
}

// deleteFenced deletes dels in transactions of at most PerTxn deletes,
// each fenced on fence; a delete of a node already gone — or, with moved,
// one changed since its version was read — drops out of its transaction.
// It stops at the first transaction that fails and returns the index in
// dels of that transaction's first delete, with the error.
func deleteFenced(ctx context.Context, rc regcenter.Center, fence regcenter.Op, dels []regcenter.DeleteOp, moved bool) (int, error) {
	for start := 0; start < len(dels); start += PerTxn {
		chunk := dels[start:min(start+PerTxn, len(dels))]
		ops := make([]regcenter.Op, 0, 1+len(chunk))
		ops = append(ops, fence)
		for _, d := range chunk {
			ops = append(ops, d)
		}
		err := regcenter.MultiDropping(ctx, rc, ops, func(op regcenter.Op, err error) bool {
			_, del := op.(regcenter.DeleteOp)
			return del && (errors.Is(err, regcenter.ErrNoNode) || moved && errors.Is(err, regcenter.ErrBadVersion))
		})
		if err != nil {
			return start, err
		}
	}
	return 0, nil
}

// RunningPaths are the running marks' paths of items, in their order.
func RunningPaths(paths layout.Job, items []int) []string {
	ps := make([]string, len(items))
	for i, it := range items {
		ps[i] = paths.ItemNode(it, layout.Running)
	}
	return ps
}

// Lost returns, sorted, which of items, whose marks this instance holds
// under sess, have no mark of sess's any more in nodes, their running
// marks as read (RunningPaths' order): removed by hand, or replaced by a
// node of another owner. The reconcile loop reads them with every other
// job's nodes, in as few requests as the registry allows.
func Lost(sess *regcenter.Session, items []int, nodes []regcenter.NodeData) []int {
	var lost []int
	for i, it := range items {
		if !nodes[i].Exists || nodes[i].Stat.EphemeralOwner != sess.ID() {
			lost = append(lost, it)
		}
	}
	slices.Sort(lost)
	return lost
}
