package marks

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/internal/parallel"
	"github.com/shardjob/shardjob/job/internal/assume"
	"github.com/shardjob/shardjob/job/internal/records"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
)

// PerTxn bounds the marks of one transaction: ten thousand in one would
// pass ZooKeeper's request limit (jute.maxbuffer, 1 MB by default).
const PerTxn = 1000

// probeAbove is the chunk size above which the items still marked
// elsewhere after the wait for another run's mark are found by reads in
// parallel, not by one failed transaction each.
const probeAbove = 8

// Marker marks the items of one job's runs on one instance.
type Marker struct {
	Center regcenter.Center
	Paths  layout.Job
	Server string // this instance's server id, written in each mark
	Log    *slog.Logger
	Holds  *assume.Holds  // the marks kept across fires: not created again
	Cache  *records.Cache // told which items were marked (records.Cache.Marked)
	// Fence returns the op that fences a write on sess's generation, if
	// the session is live (election.Election.SessionFence).
	Fence func(sess *regcenter.Session) (regcenter.Op, bool)
	// GoneWait bounds how long a marking transaction that met another
	// instance's mark waits, once, for it to go before it hands the item
	// over as busy: the time for a former owner to release the marks a
	// reshard took from it.
	GoneWait time.Duration
}

// Run is one run's items to mark.
type Run struct {
	Sess  *regcenter.Session
	Fire  time.Time
	Kind  string // the run's kind, as the mark stores it
	Items []int  // reserved here
	// Checks go first in the first transaction: a failed one ends the
	// marking with assume.ErrMoved.
	Checks []regcenter.Op
	// Records, when not nil, holds what this instance knows of some items'
	// completed records: each is checked (its version) in the transaction
	// that marks its item, and one found changed is removed from the map,
	// so that what stays is proved current as the item is marked.
	Records map[int]records.Record
}

// Outcomes are the runner's answers for the items a run cannot mark as it
// meets them. Each is called on the marking goroutine, before the marking
// goes on.
type Outcomes interface {
	// RecordChanged: item's record, checked beside its mark, changed
	// since it was known. It reports whether the item leaves the run (the
	// runner then owes and releases it); if not, the run reads the record
	// once the item is marked.
	RecordChanged(item int) (leave bool)
	// Recheck: item was marked only once another run's mark of it was
	// gone; that run may have completed this very fire.
	Recheck(item int)
	// Busy: items another run's mark holds leave this run; the runner owes
	// them (or hands a failover claim back) and releases them.
	Busy(ctx context.Context, items []int)
	// Unmarked: items a transaction after the first could not mark
	// leave the run, as Busy's do.
	Unmarked(ctx context.Context, items []int)
}

// Mark creates the running marks of run's items, in one transaction per
// PerTxn items (fewer where the registry refuses one as too large). Items
// another run holds go to out.Busy, and the rest are retried. If a check
// fails, Mark returns assume.ErrMoved. On an error it returns the items
// still reserved here, for the caller to release; items a later
// transaction could not mark go to out.Unmarked, and the ones marked are
// returned without error.
func (m *Marker) Mark(ctx context.Context, run Run, out Outcomes) ([]int, error) {
	pending, checks := run.Items, run.Checks
	var marked []int
	first, per := true, PerTxn
	for len(pending) > 0 {
		end := min(per, len(pending))
		got, err := m.chunk(ctx, run, pending[:end], checks, out)
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
				marked = got // chunk's own copy: one chunk, no second
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
		m.Log.Warn("cannot mark the rest of the items running", "items", len(rest), "err", err)
		out.Unmarked(ctx, rest)
		break
	}
	return marked, nil
}

// chunk is one transaction of Mark. On an error it returns the items still
// reserved here.
func (m *Marker) chunk(ctx context.Context, run Run, items []int, checks []regcenter.Op, out Outcomes) ([]int, error) {
	sess, recs := run.Sess, run.Records
	items = slices.Clone(items)
	parentsMade, waited, probed, swept := false, false, false, false
	// Items whose marks this instance kept from an earlier run mark
	// nothing: the mark is there, and excludes every other run.
	held := m.Holds.HeldOf(sess, items)
	var data []byte
	if len(held) < len(items) {
		mark := stored.Running{Server: m.Server, Fire: run.Fire.UnixMilli(), Kind: run.Kind, Begin: time.Now().UnixMilli(), Session: sess.String()}
		data = mark.Marshal()
	}
	for attempt := 0; len(items) > 0; attempt++ {
		if err := sess.Check(); err != nil {
			return items, err
		}
		ops, opIdx := markOps(m.Paths, items, held, recs, data, checks)
		if len(ops) == 0 {
			return items, nil // all held, nothing to prove in this chunk
		}
		err := m.Center.Multi(ctx, ops...)
		if err == nil {
			m.Holds.Add(sess, items)
			m.Cache.Marked(items, held)
			return items, nil
		}
		var me *regcenter.MultiError
		if errors.As(err, &me) && me.Index < len(checks) {
			return items, assume.ErrMoved
		}
		if !errors.As(err, &me) || attempt > 3*len(items)+2 {
			return items, err
		}
		idx := opIdx[me.Index-len(checks)]
		item := items[idx]
		if _, isCheck := ops[me.Index].(regcenter.CheckOp); isCheck {
			delete(recs, item)
			if out.RecordChanged(item) {
				items = append(items[:idx:idx], items[idx+1:]...)
			}
			continue
		}
		switch {
		case errors.Is(me.Err, regcenter.ErrNodeExists):
			if !swept && len(items) > probeAbove {
				// Marks of this very session that no run here holds: a
				// release that failed (under load, at a reshard) leaves
				// every mark of the assignment behind. Found by reads in
				// parallel and deleted a transaction at a time, not one
				// failed transaction and one delete each, which for
				// hundreds of items outlasts the fire's deadline, fire
				// after fire, and runs none of them.
				swept = true
				if gone := m.dropStaleMarks(ctx, sess, items, held); len(gone) > 0 {
					for _, it := range gone {
						out.Recheck(it)
					}
					continue
				}
			}
			if m.dropStaleMark(ctx, sess, item) {
				out.Recheck(item)
				continue
			}
			if !waited {
				// Most often the mark of an instance a reshard has just
				// taken the item from, which releases it at its watch's
				// event, with the others it gave up: wait for it once,
				// then mark everything again.
				waited = true
				if m.waitMarkGone(ctx, item, m.GoneWait) {
					out.Recheck(item)
					continue
				}
			}
			if !probed && len(items) > probeAbove {
				// Still there: an item running elsewhere, or an
				// assignment read before a reshard. Find every item of
				// the chunk in the same case at once, rather than one
				// transaction each.
				probed = true
				busy := m.markedElsewhere(ctx, sess, items, held)
				if len(busy) > 1 {
					items = m.dropBusy(ctx, run, items, busy, out)
					continue
				}
			}
			// Running elsewhere (or still running from an earlier fire).
			items = append(items[:idx:idx], items[idx+1:]...)
			out.Busy(ctx, []int{item})
		case errors.Is(me.Err, regcenter.ErrNoNode) && !parentsMade:
			// A first fire: make every missing item node of the chunk at
			// once, not one round trip per item.
			parentsMade = true
			if err := m.makeItemNodes(ctx, items); err != nil {
				return items, err
			}
		case errors.Is(me.Err, regcenter.ErrNoNode):
			if err := m.Center.EnsurePath(ctx, m.Paths.Item(item)); err != nil {
				return items, err
			}
		default:
			return items, err
		}
	}
	return items, nil
}

// markOps builds a marking transaction: checks first, then for each item
// a check of its record when recs holds it, and the creation of its mark
// unless held says this instance holds it already. idx says, for each
// operation after the checks, the index in items of the item it stands
// for.
func markOps(paths layout.Job, items []int, held map[int]bool, recs map[int]records.Record, data []byte, checks []regcenter.Op) (ops []regcenter.Op, idx []int) {
	ops = make([]regcenter.Op, 0, len(checks)+len(recs)+len(items))
	idx = make([]int, 0, len(recs)+len(items))
	ops = append(ops, checks...)
	for i, it := range items {
		if rec, ok := recs[it]; ok {
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
// meanwhile by another instance is left to chunk's per-item retry.
func (m *Marker) makeItemNodes(ctx context.Context, items []int) error {
	if err := m.Center.EnsurePath(ctx, m.Paths.Execution()); err != nil {
		return err
	}
	names, err := m.Center.Children(ctx, m.Paths.Execution())
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
			ops = append(ops, regcenter.CreateOp{Path: m.Paths.Item(it)})
		}
	}
	if len(ops) == 0 {
		return nil
	}
	err = m.Center.Multi(ctx, ops...)
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
func (m *Marker) dropStaleMark(ctx context.Context, sess *regcenter.Session, item int) bool {
	p := m.Paths.ItemNode(item, layout.Running)
	ok, st, err := m.Center.Exists(ctx, p)
	if err != nil || !ok {
		return false
	}
	if st.EphemeralOwner == 0 {
		// A persistent mark: shardjob only ever writes ephemeral ones, so
		// no execution holds it and it would block the item for good.
		err := m.Center.Delete(ctx, p, st.Version)
		if err != nil && !errors.Is(err, regcenter.ErrNoNode) {
			m.Log.Warn("removing a persistent running mark that blocks the item", "item", item, "node", p, "err", err)
			return false
		}
		m.Log.Warn("removed a persistent running mark that blocked the item (not written by an instance)", "item", item, "node", p)
		return true
	}
	if st.EphemeralOwner != sess.ID() {
		return false
	}
	fence, ok := m.Fence(sess)
	if !ok {
		return false
	}
	if err := m.Center.Multi(ctx, fence, regcenter.DeleteOp{Path: p, Version: st.Version}); err != nil {
		m.Log.Warn("removing a stale running mark of this instance", "item", item, "err", err)
		return false
	}
	m.Log.Info("removed a stale running mark of this instance", "item", item)
	return true
}

// dropStaleMarks deletes the running marks of items that belong to this
// very registry session without this instance holding them (see
// dropStaleMark): read in parallel, deleted in transactions fenced on the
// live generation, each delete on the version read. It returns the items
// whose marks it deleted; a transaction refused leaves its items, and the
// ones after it, to dropStaleMark.
func (m *Marker) dropStaleMarks(ctx context.Context, sess *regcenter.Session, items []int, held map[int]bool) []int {
	versions := make([]int32, len(items))
	stale := make([]bool, len(items))
	parallel.Each(len(items), 32, func(i int) {
		if held[items[i]] {
			return
		}
		ok, st, err := m.Center.Exists(ctx, m.Paths.ItemNode(items[i], layout.Running))
		if err == nil && ok && st.EphemeralOwner != 0 && st.EphemeralOwner == sess.ID() {
			stale[i], versions[i] = true, st.Version
		}
	})
	var found []int
	var vers []int32
	for i, it := range items {
		if stale[i] {
			found, vers = append(found, it), append(vers, versions[i])
		}
	}
	if len(found) == 0 {
		return nil
	}
	fence, ok := m.Fence(sess)
	if !ok {
		return nil
	}
	var gone []int
	for per := PerTxn; len(found) > 0; {
		n := min(per, len(found))
		ops := make([]regcenter.Op, 0, 1+n)
		ops = append(ops, fence)
		for i := range n {
			ops = append(ops, regcenter.DeleteOp{Path: m.Paths.ItemNode(found[i], layout.Running), Version: vers[i]})
		}
		err := m.Center.Multi(ctx, ops...)
		if errors.Is(err, regcenter.ErrTooLarge) && n > 1 {
			per = n / 2
			continue
		}
		if err != nil {
			m.Log.Warn("removing stale running marks of this instance", "items", layout.FormatItems(found[:n]), "err", err)
			break
		}
		gone = append(gone, found[:n]...)
		found, vers = found[n:], vers[n:]
	}
	if len(gone) > 0 {
		m.Log.Info("removed stale running marks of this instance", "items", layout.FormatItems(gone))
	}
	return gone
}

// waitMarkGone waits up to d for item's running mark to go, and reports
// whether it went.
func (m *Marker) waitMarkGone(ctx context.Context, item int, d time.Duration) bool {
	gone := make(chan struct{})
	var once sync.Once
	st, cancel, err := m.Center.WatchNow(ctx, m.Paths.ItemNode(item, layout.Running), regcenter.WatchNode, func(ev regcenter.Event) {
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
func (m *Marker) markedElsewhere(ctx context.Context, sess *regcenter.Session, items []int, held map[int]bool) map[int]bool {
	other := make([]bool, len(items))
	parallel.Each(len(items), 32, func(i int) {
		if held[items[i]] {
			return
		}
		ok, st, err := m.Center.Exists(ctx, m.Paths.ItemNode(items[i], layout.Running))
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

// dropBusy takes the items busy says run elsewhere out of a marking run's
// items, as chunk does one at a time, and hands them to out.Busy. It
// returns the items left.
func (m *Marker) dropBusy(ctx context.Context, run Run, items []int, busy map[int]bool, out Outcomes) []int {
	var left, gone []int
	for _, it := range items {
		if busy[it] {
			gone = append(gone, it)
		} else {
			left = append(left, it)
		}
	}
	m.Log.Info("items still marked by another instance; owed until their marks go", "items", layout.FormatItems(gone), "fire", run.Fire, "kind", run.Kind)
	out.Busy(ctx, gone)
	return left
}
