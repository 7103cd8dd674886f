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
	for start := 0; start < len(items); start += PerTxn {
		chunk := items[start:min(start+PerTxn, len(items))]
		ops := make([]regcenter.Op, 0, 1+len(chunk))
		ops = append(ops, fence)
		for _, it := range chunk {
			ops = append(ops, regcenter.DeleteOp{Path: paths.ItemNode(it, layout.Running), Version: -1})
		}
		err := regcenter.MultiDropping(ctx, rc, ops, func(op regcenter.Op, err error) bool {
			_, del := op.(regcenter.DeleteOp)
			return del && errors.Is(err, regcenter.ErrNoNode)
		})
		if err != nil {
			return chunk, err
		}
	}
	return nil, nil
}

// NotHeld returns which of items, whose marks this instance holds under
// sess, have no mark of sess's any more: removed by hand, or replaced by a
// node of another owner. It reads one node per item; on a failed read it
// returns the error and no items.
func NotHeld(ctx context.Context, rc regcenter.Center, paths layout.Job, sess *regcenter.Session, items []int) ([]int, error) {
	var lost []int
	for _, it := range items {
		ok, st, err := rc.Exists(ctx, paths.ItemNode(it, layout.Running))
		if err != nil {
			return nil, err
		}
		if !ok || st.EphemeralOwner != sess.ID() {
			lost = append(lost, it)
		}
	}
	slices.Sort(lost)
	return lost, nil
}
