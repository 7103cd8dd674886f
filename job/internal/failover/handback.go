package failover

import (
	"context"
	"errors"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
)

// WaitFor is the node whose end lets this instance (self) claim item
// again once it handed its claim back: the status node of the instance
// whose running mark holds the item, while that instance is registered —
// it pays the queue entry itself when its run ends; otherwise (the mark
// is this instance's, or missing, or does not decode, or its instance
// has left already) the running mark itself. At most two round trips;
// a failed read counts as no registered runner.
func WaitFor(ctx context.Context, rc regcenter.Center, paths layout.Job, item int, self string) string {
	var runner string
	data, _, err := rc.Get(ctx, paths.ItemNode(item, layout.Running))
	if m, derr := stored.DecodeRunning(data); err == nil && derr == nil && m.Server != self {
		runner = m.Server
		// One that has left already (shutting down, or gone and not
		// yet expired) pays nothing more: wait for its mark instead.
		if ok, _, err := rc.Exists(ctx, paths.Flag(runner, layout.Status)); err != nil || !ok {
			runner = ""
		}
	}
	if runner != "" {
		return paths.Flag(runner, layout.Status)
	}
	return paths.ItemNode(item, layout.Running)
}

// HandBack deletes this instance's claim on item (its failover node), in
// a transaction fenced on fence, so that the queue entry stays for
// whoever can run the item. A claim already gone is no error.
func HandBack(ctx context.Context, rc regcenter.Center, paths layout.Job, item int, fence regcenter.Op) error {
	p := paths.ItemNode(item, layout.Failover)
	err := rc.Multi(ctx, fence, regcenter.DeleteOp{Path: p, Version: -1})
	var me *regcenter.MultiError
	if err != nil && !(errors.As(err, &me) && me.Index == 1 && errors.Is(err, regcenter.ErrNoNode)) {
		return err
	}
	return nil
}
