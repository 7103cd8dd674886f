package job

import (
	"context"
	"errors"
	"fmt"
	"time"

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

	var errs []error
	if !r.waitIdle(ctx) {
		r.execCancel(ErrSchedulerClosed)
		errs = append(errs, fmt.Errorf("running items cancelled: %w", ctx.Err()))
		// Give cancelled items a moment to return and hand themselves over.
		grace, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if !r.waitIdle(grace) {
			errs = append(errs, errors.New("some items ignore their context and are still running"))
		}
		cancel()
	}

	// Cleanup gets its own bounded time even if ctx is spent: leaving
	// ZooKeeper clean is what lets the others take over immediately.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.sessionTimeout())
	defer cancel()
	// Leave before resigning, so that the next leader, resharding at once,
	// already sees this instance gone.
	r.mu.Lock()
	registered := r.regSess != nil && r.regSess.Err() == nil
	removed := r.removed
	r.mu.Unlock()
	if registered {
		if err := r.leave(cctx, !removed); err != nil {
			errs = append(errs, err)
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

// leave removes this instance from the job: its status goes and its
// assignment is cleared in one transaction, then a reshard is flagged.
func (r *runner) leave(ctx context.Context, flagReshard bool) error {
	ops := []regcenter.Op{
		regcenter.DeleteOp{Path: r.paths.Flag(r.serverID(), layout.Status), Version: -1},
		regcenter.SetOp{Path: r.paths.Flag(r.serverID(), layout.Sharding), Data: nil, Version: -1},
	}
	err := r.rc.Multi(ctx, ops...)
	var me *regcenter.MultiError
	if errors.As(err, &me) && errors.Is(me.Err, regcenter.ErrNoNode) {
		// No assignment yet (or status already gone): delete what exists.
		err = r.rc.Delete(ctx, r.paths.Flag(r.serverID(), layout.Status), -1)
		if errors.Is(err, regcenter.ErrNoNode) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("leave: %w", err)
	}
	if flagReshard {
		r.setNecessary(ctx)
	}
	r.log.Info("left the job")
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
