package registration

import (
	"context"
	"errors"
	"fmt"

	"github.com/shardjob/shardjob/failover"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// Leaving says how a server leaves a job (Leave).
type Leaving struct {
	RC     regcenter.Center
	Paths  layout.Job
	Job    string
	Server string
	// FlagReshard flags a reshard in the same transaction, so that the
	// others take the items at their next fire.
	FlagReshard bool
	// HandOver, when set, returns the queue entries of the runs owed for
	// the items held (those the sharding node read lists): they go to
	// the failover queue in the same transaction.
	HandOver func(held []int) []failover.Entry
}

// leaveAttempts bounds the transactions of a Leave whose reads another
// change makes stale.
const leaveAttempts = 5

// Leave removes the server from the job in one transaction: its status
// goes, its assignment is cleared (conditional on the version read, so
// that a reshard in between is not missed), a reshard is flagged, and
// the runs handed over are queued. Nodes already as wanted (no status,
// the flag already there) drop out of the transaction; one that changed
// meanwhile has it read and sent again, at most leaveAttempts times. It
// returns the items held as read and the entries queued.
func Leave(ctx context.Context, l Leaving) (held []int, queued []failover.Entry, err error) {
	q := failover.NewQueue(l.RC, l.Job)
	shardPath := l.Paths.Flag(l.Server, layout.Sharding)
	for range leaveAttempts {
		held = nil
		version := int32(-1)
		data, st, gerr := l.RC.Get(ctx, shardPath)
		switch {
		case gerr == nil:
			version = st.Version
			held, _ = layout.ParseItems(string(data)) // garbage: nothing held
		case errors.Is(gerr, regcenter.ErrNoNode):
		default:
			return nil, nil, fmt.Errorf("leave: %w", gerr)
		}
		ops := []regcenter.Op{regcenter.DeleteOp{Path: l.Paths.Flag(l.Server, layout.Status), Version: -1}}
		if version >= 0 {
			ops = append(ops, regcenter.SetOp{Path: shardPath, Data: nil, Version: version})
		}
		if l.FlagReshard {
			ops = append(ops, l.Paths.FlagReshardOps()...)
		}
		queued = nil
		if l.HandOver != nil {
			queued = l.HandOver(held)
			// The queue is made on demand: its parent must exist for the
			// transaction's creates.
			if len(queued) > 0 {
				if err := l.RC.EnsurePath(ctx, l.Paths.FailoverItems()); err != nil {
					return nil, nil, fmt.Errorf("leave: %w", err)
				}
			}
			qops, err := q.MergeOps(ctx, queued)
			if err != nil {
				return nil, nil, fmt.Errorf("leave: %w", err)
			}
			ops = append(ops, qops...)
		}
		err = regcenter.MultiDropping(ctx, l.RC, ops, func(op regcenter.Op, err error) bool {
			switch op := op.(type) {
			case regcenter.DeleteOp:
				return errors.Is(err, regcenter.ErrNoNode)
			case regcenter.CreateOp:
				return op.Path == l.Paths.Necessary() && errors.Is(err, regcenter.ErrNodeExists)
			}
			return false
		})
		var me *regcenter.MultiError
		if err != nil && errors.As(err, &me) && (errors.Is(me.Err, regcenter.ErrBadVersion) ||
			errors.Is(me.Err, regcenter.ErrNodeExists) || errors.Is(me.Err, regcenter.ErrNoNode)) {
			continue // the assignment or the queue changed meanwhile: read again
		}
		if err != nil {
			return nil, nil, fmt.Errorf("leave: %w", err)
		}
		return held, queued, nil
	}
	return nil, nil, fmt.Errorf("leave: %w", err)
}
