package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardjob/shardjob/failover"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// stop is the job's part of a graceful shutdown: no new fires; running
// items finish until ctx ends and are then cancelled (and, with failover on,
// queued for another instance); leadership is released; this instance's
// nodes are removed and a reshard is flagged, so the others take its items
// at their next fire without waiting for a session timeout.
func (r *runner) stop(ctx context.Context) error {
	r.mu.Lock()
	r.stopping = true
	r.mu.Unlock()
	r.lifeCancel()
	r.s.trig.remove(r.name)

	// Cleanup gets its own bounded time even if ctx is spent: leaving
	// ZooKeeper clean is what lets the others take over immediately.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.sessionTimeout())
	defer cancel()

	// Leave first, while items may still be running: the others reshard at
	// their next fire, so this instance's idle items are not left without an
	// owner while its busy ones finish. The busy ones keep their running
	// marks; a new owner finds them and runs the item once they are gone.
	var errs []error
	r.mu.Lock()
	registered := r.regSess != nil && r.regSess.Err() == nil
	removed := r.removed
	r.mu.Unlock()
	if registered {
		if err := r.leave(cctx, !removed); err != nil {
			errs = append(errs, err)
		}
	}

	if !r.waitIdle(ctx) {
		r.execCancel(ErrSchedulerClosed)
		errs = append(errs, fmt.Errorf("running items cancelled: %w", ctx.Err()))
		// Give cancelled items a moment to return and hand themselves over.
		grace, gcancel := context.WithTimeout(context.Background(), 2*time.Second)
		if !r.waitIdle(grace) {
			errs = append(errs, errors.New("some items ignore their context and are still running"))
		}
		gcancel()
	}
	// Runs owed to items that were busy when this instance left: with
	// failover on, another instance makes up for them.
	if registered && r.config().Failover {
		var owed []failover.Entry
		r.mu.Lock()
		for it, since := range r.misfires {
			owed = append(owed, failover.Entry{Item: it, Fire: since.UnixMilli(), From: r.serverID()})
		}
		r.misfires = map[int]time.Time{}
		r.mu.Unlock()
		if len(owed) > 0 {
			if err := failover.NewQueue(r.rc, r.name).Enqueue(cctx, owed); err != nil {
				errs = append(errs, fmt.Errorf("handing owed runs over: %w", err))
			}
		}
	}
	if err := r.elect.Resign(cctx); err != nil {
		errs = append(errs, err)
	}

	r.mu.Lock()
	r.closed = true
	cancels := []func(){r.configCancel, r.queueCancel, r.flagsCancel, r.itemsCancel}
	for _, c := range r.remoteWaits {
		cancels = append(cancels, c)
	}
	for _, c := range r.claimWatches {
		cancels = append(cancels, c)
	}
	r.remoteWaits, r.claimWatches = map[int]func(){}, map[int]func(){}
	r.mu.Unlock()
	r.onRevoked()
	for _, c := range cancels {
		if c != nil {
			c()
		}
	}
	r.elect.Close()
	r.execCancel(ErrSchedulerClosed)

	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-cctx.Done():
		errs = append(errs, errors.New("background work did not end in time"))
	}
	return errors.Join(errs...)
}

// leave removes this instance from the job in one transaction: its status
// goes, its assignment is cleared, a reshard is flagged, and — with failover
// on — the runs it still owed (misfires) are handed over.
func (r *runner) leave(ctx context.Context, flagReshard bool) error {
	ops := []regcenter.Op{
		regcenter.DeleteOp{Path: r.paths.Flag(r.serverID(), layout.Status), Version: -1},
		regcenter.SetOp{Path: r.paths.Flag(r.serverID(), layout.Sharding), Data: nil, Version: -1},
	}
	if flagReshard {
		ops = append(ops, regcenter.CreateOp{Path: r.paths.Necessary()})
	}
	if cfg := r.config(); cfg.Failover {
		var owed []failover.Entry
		r.mu.Lock()
		for it, since := range r.misfires {
			if _, busy := r.running[it]; !busy {
				owed = append(owed, failover.Entry{Item: it, Fire: since.UnixMilli(), From: r.serverID()})
				delete(r.misfires, it)
			}
		}
		r.mu.Unlock()
		ops = append(ops, failover.NewQueue(r.rc, r.name).EnqueueOps(owed)...)
	}
	// Nodes that are already as wanted (no status, no assignment, the flag
	// or the queue entry already there) drop out of the transaction.
	err := multiDropping(ctx, r.rc, ops, func(op regcenter.Op, err error) bool {
		_, isCreate := op.(regcenter.CreateOp)
		return (!isCreate && errors.Is(err, regcenter.ErrNoNode)) || (isCreate && errors.Is(err, regcenter.ErrNodeExists))
	})
	if err != nil {
		return fmt.Errorf("leave: %w", err)
	}
	r.log.Info("left the job")
	return nil
}

// multiDropping applies ops in one transaction; when an op fails in a way
// drop accepts, the transaction is retried without it.
func multiDropping(ctx context.Context, rc regcenter.Center, ops []regcenter.Op, drop func(regcenter.Op, error) bool) error {
	for len(ops) > 0 {
		err := rc.Multi(ctx, ops...)
		var me *regcenter.MultiError
		if err == nil || !errors.As(err, &me) || !drop(me.Op, me.Err) {
			return err
		}
		ops = append(ops[:me.Index:me.Index], ops[me.Index+1:]...)
	}
	return nil
}

// waitIdle waits until no item runs here, or ctx ends (false).
func (r *runner) waitIdle(ctx context.Context) bool {
	for {
		r.mu.Lock()
		n := len(r.running)
		idle := r.idle
		r.mu.Unlock()
		if n == 0 {
			return true
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return false
		}
	}
}
