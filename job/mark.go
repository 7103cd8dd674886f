package job

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/internal/parallel"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
)

// The mark stage: running marks (execution/{item}/running, ephemeral) for
// the items of a run, in transactions of at most marksPerTxn items; a
// fire's proof (assignment.go) travels in the first.

// marksPerTxn bounds the marks of one transaction: ten thousand in one
// would pass ZooKeeper's request limit (jute.maxbuffer, 1 MB by default).
const marksPerTxn = 1000

// markGoneWait bounds how long a marking transaction that met another
// instance's mark waits, once, for it to go before it owes the item: the
// time for a former owner to release the marks a reshard took from it.
// probeAbove is the chunk size above which the items still marked
// elsewhere after that wait are found by reads in parallel, not by one
// failed transaction each.
var markGoneWait = 250 * time.Millisecond // a test lengthens it

const probeAbove = 8

// markRunning creates the running marks of f's items for its fire, in one transaction per
// marksPerTxn items (fewer where the registry refuses one as too large). Items running elsewhere are dropped (and owed a
// misfire) and the rest retried. checks go first in the first transaction;
// if one fails, markRunning returns errAssignmentMoved. On an error it
// returns the items still reserved here, for the caller to release; items
// a later transaction could not mark are owed a misfire (or, for failover,
// handed back) and released, and the ones marked are returned without error.
//
// records, when not nil, holds what this instance knows of some items'
// completed records: each is checked (its version) in the transaction that
// marks its item, and one found changed is removed from the map, so that
// what stays is proved current as the item is marked (see stillOwed).
func (r *runner) markRunning(ctx context.Context, f *fire, checks []regcenter.Op, records map[int]record) ([]int, error) {
	sess, at, kind, pending := f.sess, f.at, f.kind, f.items
	var marked []int
	first, per := true, marksPerTxn
	for len(pending) > 0 {
		end := min(per, len(pending))
		got, err := r.markChunk(ctx, f, pending[:end], checks, records)
		if errors.Is(err, regcenter.ErrTooLarge) && len(got) > 1 {
			// Refused whole, nothing applied (a registry with a lower
			// limit, an etcd cluster's --max-txn-ops): the items still
			// reserved go in transactions half the size.
			per = len(got) / 2
			pending = append(got, pending[end:]...)
			continue
		}
		checks = nil
		if err == nil {
			if marked == nil {
				marked = got // markChunk's own copy: one chunk, no second
			} else {
				marked = append(marked, got...)
			}
			first, pending = false, pending[end:]
			continue
		}
		rest := append(got, pending[end:]...)
		if first {
			return rest, err
		}
		r.log.Warn("cannot mark the rest of the items running", "items", len(rest), "err", err)
		if kind == KindFailover {
			r.handBack(ctx, sess, rest)
		} else {
			cfg := r.config()
			for _, it := range rest {
				r.book.NoteMisfire(cfg.book, it, at)
			}
		}
		r.release(rest)
		break
	}
	return marked, nil
}

// markChunk is one transaction of markRunning. On an error it returns the
// items still reserved here.
func (r *runner) markChunk(ctx context.Context, f *fire, items []int, checks []regcenter.Op, records map[int]record) ([]int, error) {
	sess, at, kind := f.sess, f.at, f.kind
	items = slices.Clone(items)
	parentsMade, waited, probed := false, false, false
	// Items whose marks this instance kept from an earlier run mark
	// nothing: the mark is there, and excludes every other run (hold.go).
	held := r.holds.HeldOf(sess, items)
	var data []byte
	if len(held) < len(items) {
		mark := stored.Running{Server: r.serverID(), Fire: at.UnixMilli(), Kind: string(kind), Begin: time.Now().UnixMilli(), Session: sess.String()}
		data = mark.Marshal()
	}
	for attempt := 0; len(items) > 0; attempt++ {
		if err := sess.Check(); err != nil {
			return items, err
		}
		ops, opIdx := markOps(r.paths, items, held, records, data, checks)
		if len(ops) == 0 {
			return items, nil // all held, nothing to prove in this chunk
		}
		err := r.rc.Multi(ctx, ops...)
		if err == nil {
			r.holds.Add(sess, items)
			r.records.Marked(items, held)
			return items, nil
		}
		var me *regcenter.MultiError
		if errors.As(err, &me) && me.Index < len(checks) {
			return items, errAssignmentMoved
		}
		if !errors.As(err, &me) || attempt > 3*len(items)+2 {
			return items, err
		}
		idx := opIdx[me.Index-len(checks)]
		item := items[idx]
		if _, isCheck := ops[me.Index].(regcenter.CheckOp); isCheck {
			delete(records, item)
			if kind == KindFire {
				// Completed elsewhere since this fire read it: perhaps
				// this very fire, by the owner before a reshard. The item
				// runs as a make-up run, which reads the record and runs
				// only what it does not cover.
				items = append(items[:idx:idx], items[idx+1:]...)
				r.book.NoteMisfire(r.config().book, item, at)
				r.release([]int{item})
				continue
			}
			// Written elsewhere since this instance knew it: the run reads
			// it once the item is marked.
			continue
		}
		switch {
		case errors.Is(me.Err, regcenter.ErrNodeExists):
			if r.dropStaleMark(ctx, sess, item) {
				f.recheck(item)
				continue
			}
			if !waited {
				// Most often the mark of an instance a reshard has just
				// taken the item from, which releases it at its watch's
				// event (hold.go), with the others it gave up: wait for
				// it once, then mark everything again.
				waited = true
				if r.waitMarkGone(ctx, item, markGoneWait) {
					f.recheck(item)
					continue
				}
			}
			if !probed && len(items) > probeAbove {
				// Still there: an item running elsewhere, or an
				// assignment read before a reshard. Find every item of
				// the chunk in the same case at once, rather than one
				// transaction each.
				probed = true
				busy := r.markedElsewhere(ctx, sess, items, held)
				if len(busy) > 1 {
					items = r.dropBusy(ctx, f, items, busy)
					continue
				}
			}
			// Running elsewhere (or still running from an earlier fire).
			items = append(items[:idx:idx], items[idx+1:]...)
			if kind == KindFailover {
				// The queue entry still records the debt: give the claim
				// back rather than hold it while the item runs elsewhere.
				r.handBack(ctx, sess, []int{item})
				r.release([]int{item})
				continue
			}
			// Owed before the item is free again here: a fire reserving
			// it in between must see the debt, or it would run as a plain
			// fire and the debt's run would run that fire again.
			r.book.NoteMisfire(r.config().book, item, at)
			r.release([]int{item})
			r.owesMisfireRemote(ctx, item, at)
		case errors.Is(me.Err, regcenter.ErrNoNode) && !parentsMade:
			// A first fire: make every missing item node of the chunk at
			// once, not one round trip per item.
			parentsMade = true
			if err := r.makeItemNodes(ctx, items); err != nil {
				return items, err
			}
		case errors.Is(me.Err, regcenter.ErrNoNode):
			if err := r.rc.EnsurePath(ctx, r.paths.Item(item)); err != nil {
				return items, err
			}
		default:
			return items, err
		}
	}
	return items, nil
}

// markOps builds a marking transaction: checks first, then for each item
// a check of its record when records holds it, and the creation of its
// mark unless held says this instance holds it already. idx says, for each
// operation after the checks, the index in items of the item it stands
// for.
func markOps(paths layout.Job, items []int, held map[int]bool, records map[int]record, data []byte, checks []regcenter.Op) (ops []regcenter.Op, idx []int) {
	ops = make([]regcenter.Op, 0, len(checks)+len(records)+len(items))
	idx = make([]int, 0, len(records)+len(items))
	ops = append(ops, checks...)
	for i, it := range items {
		if rec, ok := records[it]; ok {
			ops = append(ops, regcenter.CheckOp{Path: paths.ItemNode(it, layout.Completed), Version: rec.Version})
			idx = append(idx, i)
		}
		if !held[it] {
			ops = append(ops, regcenter.CreateOp{Path: paths.ItemNode(it, layout.Running), Data: data, Mode: regcenter.Ephemeral})
			idx = append(idx, i)
		}
	}
	return ops, idx
}

// makeItemNodes creates the execution nodes of items that do not exist
// yet: one read of the existing ones and one transaction. A node created
// meanwhile by another instance is left to markChunk's per-item retry.
func (r *runner) makeItemNodes(ctx context.Context, items []int) error {
	if err := r.rc.EnsurePath(ctx, r.paths.Execution()); err != nil {
		return err
	}
	names, err := r.rc.Children(ctx, r.paths.Execution())
	if err != nil {
		return err
	}
	have := make(map[string]bool, len(names))
	for _, n := range names {
		have[n] = true
	}
	var ops []regcenter.Op
	for _, it := range items {
		if !have[strconv.Itoa(it)] {
			ops = append(ops, regcenter.CreateOp{Path: r.paths.Item(it)})
		}
	}
	if len(ops) == 0 {
		return nil
	}
	err = r.rc.Multi(ctx, ops...)
	if errors.Is(err, regcenter.ErrNodeExists) {
		return nil
	}
	return err
}

// dropStaleMark deletes item's running mark if it belongs to this very
// registry session: a mark left by an execution of an earlier generation of
// the session (its lease lapsed, the session survived), whose completion
// could not delete it. The item is reserved here, so no execution of ours
// holds it. The delete is fenced on the live generation.
func (r *runner) dropStaleMark(ctx context.Context, sess *regcenter.Session, item int) bool {
	p := r.paths.ItemNode(item, layout.Running)
	ok, st, err := r.rc.Exists(ctx, p)
	if err != nil || !ok {
		return false
	}
	if st.EphemeralOwner == 0 {
		// A persistent mark: shardjob only ever writes ephemeral ones, so
		// no execution holds it and it would block the item for good.
		err := r.rc.Delete(ctx, p, st.Version)
		if err != nil && !errors.Is(err, regcenter.ErrNoNode) {
			r.log.Warn("removing a persistent running mark that blocks the item", "item", item, "node", p, "err", err)
			return false
		}
		r.log.Warn("removed a persistent running mark that blocked the item (not written by an instance)", "item", item, "node", p)
		return true
	}
	if st.EphemeralOwner != sess.ID() {
		return false
	}
	fence, ok := r.elect.SessionFence(sess)
	if !ok {
		return false
	}
	if err := r.rc.Multi(ctx, fence, regcenter.DeleteOp{Path: p, Version: st.Version}); err != nil {
		r.log.Warn("removing a stale running mark of this instance", "item", item, "err", err)
		return false
	}
	r.log.Info("removed a stale running mark of this instance", "item", item)
	return true
}

// waitMarkGone waits up to d for item's running mark to go, and reports
// whether it went.
func (r *runner) waitMarkGone(ctx context.Context, item int, d time.Duration) bool {
	gone := make(chan struct{})
	var once sync.Once
	st, cancel, err := r.rc.WatchNow(ctx, r.paths.ItemNode(item, layout.Running), regcenter.WatchNode, func(ev regcenter.Event) {
		if ev.Type == regcenter.EventDeleted {
			once.Do(func() { close(gone) })
		}
	})
	defer cancel()
	if err != nil {
		return false
	}
	if !st.Exists {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-gone:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// markedElsewhere reads, in parallel, the running marks of the items this
// instance does not hold, and returns those that another session's mark
// holds (a mark of this session is stale: the retry removes it).
func (r *runner) markedElsewhere(ctx context.Context, sess *regcenter.Session, items []int, held map[int]bool) map[int]bool {
	other := make([]bool, len(items))
	parallel.Each(len(items), 32, func(i int) {
		if held[items[i]] {
			return
		}
		ok, st, err := r.rc.Exists(ctx, r.paths.ItemNode(items[i], layout.Running))
		other[i] = err == nil && ok && st.EphemeralOwner != sess.ID() && st.EphemeralOwner != 0
	})
	busy := map[int]bool{}
	for i, it := range items {
		if other[i] {
			busy[it] = true
		}
	}
	return busy
}

// dropBusy takes the items busy says run elsewhere out of a marking
// fire's items, as markChunk does one at a time: a failover run hands its
// claims back; any other run owes the fire, and waits for the marks to go.
// It returns the items left.
func (r *runner) dropBusy(ctx context.Context, f *fire, items []int, busy map[int]bool) []int {
	var left, gone []int
	for _, it := range items {
		if busy[it] {
			gone = append(gone, it)
		} else {
			left = append(left, it)
		}
	}
	r.log.Info("items still marked by another instance; owed until their marks go", "items", layout.FormatItems(gone), "fire", f.at, "kind", f.kind)
	if f.kind == KindFailover {
		r.handBack(ctx, f.sess, gone)
		r.release(gone)
		return left
	}
	cfg := r.config()
	for _, it := range gone {
		r.book.NoteMisfire(cfg.book, it, f.at)
	}
	r.release(gone)
	parallel.Each(len(gone), 32, func(i int) { r.owesMisfireRemote(ctx, gone[i], f.at) })
	return left
}
