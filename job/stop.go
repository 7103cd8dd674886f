package job

import (
	"context"
	"errors"
	"fmt"
	"sort"
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
	r.reg.stopping = true
	r.mu.Unlock()
	r.ctx.cancelLife()
	r.s.trig.remove(r.name)
	r.stopPrepare()

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
	registered := r.reg.sess != nil && r.reg.sess.Err() == nil
	removed := r.reg.removed
	r.mu.Unlock()
	// Every fire of the schedule up to now was this instance's to run for
	// the items it holds; later fires belong to whoever holds them next.
	var upTo time.Time
	if sched, _, err := r.config().Schedule(); err == nil {
		upTo = prevFire(sched, r.s.opts.now())
	}
	handOver := registered && !removed && r.config().Failover
	if registered {
		if err := r.leave(cctx, !removed, handOver, upTo); err != nil {
			errs = append(errs, err)
		} else if r.heldAtLeaveAny() && !removed {
			// The leave cleared this instance's assignment: the load
			// table says so now, not at the job's next fire (and not
			// never, when no other instance runs the job).
			if err := r.repairBooks(cctx); err != nil {
				r.log.Warn("repairing the load table's books after leaving", "err", err)
			}
		}
	}

	if !r.waitIdle(ctx) {
		r.ctx.cancelExec(ErrSchedulerClosed)
		errs = append(errs, fmt.Errorf("running items cancelled: %w", ctx.Err()))
		// Give cancelled items a moment to return and hand themselves over.
		grace, gcancel := context.WithTimeout(context.Background(), 2*time.Second)
		if !r.waitIdle(grace) {
			errs = append(errs, errors.New("some items ignore their context and are still running"))
		}
		gcancel()
	}
	// The rest of the cleanup gets its own bounded time too: the wait for
	// running items may have used up the first.
	cancel()
	cctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), r.sessionTimeout())
	defer cancel()
	// Fires in flight when the stop began end at once (no new marks: the
	// coordination context is gone) and note what they owe.
	if !waitCtx(cctx, &r.runs.firing) {
		errs = append(errs, errors.New("fires in flight did not end in time"))
	}
	// Runs still owed — to items that were busy when this instance left, or
	// noted by fires in flight — go to another instance.
	if handOver {
		r.mu.Lock()
		owed := r.owedLocked(r.reg.heldAtLeave, time.Time{})
		r.owed.forgetAll()
		r.mu.Unlock()
		if len(owed) > 0 {
			if err := failover.NewQueue(r.rc, r.name).Enqueue(cctx, owed); err != nil {
				errs = append(errs, fmt.Errorf("handing owed runs over: %w", err))
			} else {
				r.log.Info("handed owed runs over", "items", len(owed))
			}
		}
	}
	if err := r.elect.Resign(cctx); err != nil {
		errs = append(errs, err)
	}

	cancels := append(r.cache.close(), r.fo.close()...)
	cancels = append(cancels, r.watch.close()...)
	r.mu.Lock()
	r.closed = true
	for _, c := range r.remoteWaits {
		cancels = append(cancels, c)
	}
	r.remoteWaits = map[int]func(){}
	r.mu.Unlock()
	r.onRevoked()
	for _, c := range cancels {
		if c != nil {
			c()
		}
	}
	r.elect.Close()
	r.ctx.cancelExec(ErrSchedulerClosed)

	if !waitCtx(cctx, &r.wg) {
		errs = append(errs, errors.New("background work did not end in time"))
	}
	r.ctx.cancelRecord()
	why := "shutdown"
	if removed {
		why = "removed from the cluster"
	}
	r.s.emit(Event{Kind: EventStopped, Job: r.name, Detail: why})
	return errors.Join(errs...)
}

// leave removes this instance from the job in one transaction: its status
// goes, its assignment is cleared, a reshard is flagged, and — with
// handOver — the runs it owes go to the failover queue: misfires, fires
// missed while disconnected, and the fire at upTo for every held item that
// no fire here has taken yet (a fire in flight when the stop began).
func (r *runner) leave(ctx context.Context, flagReshard, handOver bool, upTo time.Time) error {
	q := failover.NewQueue(r.rc, r.name)
	shardPath := r.paths.Flag(r.serverID(), layout.Sharding)
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		// Read the assignment being given up; the clear below is
		// conditional on it, so a reshard in between is not missed.
		var held []int
		version := int32(-1)
		data, st, gerr := r.rc.Get(ctx, shardPath)
		switch {
		case gerr == nil:
			version = st.Version
			held, _ = layout.ParseItems(string(data)) // garbage: nothing held
		case errors.Is(gerr, regcenter.ErrNoNode):
		default:
			return fmt.Errorf("leave: %w", gerr)
		}
		ops := []regcenter.Op{regcenter.DeleteOp{Path: r.paths.Flag(r.serverID(), layout.Status), Version: -1}}
		if version >= 0 {
			ops = append(ops, regcenter.SetOp{Path: shardPath, Data: nil, Version: version})
		}
		if flagReshard {
			ops = append(ops, r.paths.FlagReshardOps()...)
		}
		var owed []failover.Entry
		if handOver {
			r.mu.Lock()
			owed = r.owedLocked(held, upTo)
			r.mu.Unlock()
			// The queue is made on demand: its parent must exist for the
			// transaction's creates.
			if len(owed) > 0 {
				if err := r.rc.EnsurePath(ctx, r.paths.FailoverItems()); err != nil {
					return fmt.Errorf("leave: %w", err)
				}
			}
			qops, err := q.MergeOps(ctx, owed)
			if err != nil {
				return fmt.Errorf("leave: %w", err)
			}
			ops = append(ops, qops...)
		}
		// Nodes that are already as wanted (no status, the flag already
		// there) drop out of the transaction.
		err = multiDropping(ctx, r.rc, ops, func(op regcenter.Op, err error) bool {
			switch op := op.(type) {
			case regcenter.DeleteOp:
				return errors.Is(err, regcenter.ErrNoNode)
			case regcenter.CreateOp:
				return op.Path == r.paths.Necessary() && errors.Is(err, regcenter.ErrNodeExists)
			}
			return false
		})
		var me *regcenter.MultiError
		if err != nil && errors.As(err, &me) && (errors.Is(me.Err, regcenter.ErrBadVersion) ||
			errors.Is(me.Err, regcenter.ErrNodeExists) || errors.Is(me.Err, regcenter.ErrNoNode)) {
			continue // the assignment or the queue changed meanwhile: read again
		}
		if err != nil {
			return fmt.Errorf("leave: %w", err)
		}
		r.mu.Lock()
		r.reg.heldAtLeave = held
		for _, e := range owed {
			r.owed.forget(e.Item)
		}
		r.owed.takeMissed() // handed over with the assignment
		r.mu.Unlock()
		r.log.Info("left the job", "handed_over", len(owed))
		return nil
	}
	return fmt.Errorf("leave: %w", err)
}

// heldAtLeaveAny reports whether the leave gave up any item.
func (r *runner) heldAtLeaveAny() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reg.heldAtLeave) > 0
}

// owedLocked returns the runs this instance owes: every misfire, and for
// each held item the earlier of the fire missed while disconnected and
// upTo, when no fire here has taken upTo yet. r.mu is held.
func (r *runner) owedLocked(held []int, upTo time.Time) []failover.Entry {
	cfg := r.config()
	since := map[int]time.Time{}
	owe := func(it int, at time.Time) {
		if at.IsZero() || it < 0 || it >= cfg.ShardingTotalCount || r.flags.disabledItems()[it] {
			return
		}
		if prev, ok := since[it]; !ok || at.Before(prev) {
			since[it] = at
		}
	}
	for it, at := range r.owed.debts() {
		owe(it, at)
	}
	for _, it := range held {
		owe(it, r.owed.missedWhileDown())
		// A paused server's fires are not owed: an operator held them.
		if !upTo.IsZero() && !r.flags.paused.Load() && r.owed.dispatchedAt(it).Before(upTo) {
			owe(it, upTo)
		}
	}
	owed := make([]failover.Entry, 0, len(since))
	for it, at := range since {
		owed = append(owed, failover.Entry{Item: it, Fire: at.UnixMilli(), From: r.serverID()})
	}
	sort.Slice(owed, func(i, j int) bool { return owed[i].Item < owed[j].Item })
	return owed
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
		n := len(r.runs.running)
		if n == 0 {
			r.mu.Unlock()
			return true
		}
		idle := r.idleLocked()
		r.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return false
		}
	}
}
