package marks

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/internal/parallel"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
)

// A registry session can outlive one of its generations: the client
// heard nothing for two thirds of the session timeout and ended the
// generation, the server did not expire the session, and the client took
// it up again under the same id (regcenter.Session). The ephemeral nodes
// the ended generation made stay, owned by the live one's id: running
// marks whose completions the fence refused, failover claims whose runs
// ended unfenced. A mark of an item this instance fires again is removed
// by that fire (Marker.dropStaleMark); one of an item that moved away, or
// that it ran by failover, is removed by nobody else — its owner's fires
// meet it, read it as a run in flight, and owe the item for good. Ended
// removes them.

// Ended removes the running marks and failover claims one job's ended
// generations left under the session id that lives on. Its fields are set
// once, before its first use.
type Ended struct {
	Center regcenter.Center
	Paths  layout.Job
	Log    *slog.Logger
	// Fence returns the op that fences a write on sess's generation, if
	// the session is live (election.Election.SessionFence).
	Fence func(sess *regcenter.Session) (regcenter.Op, bool)
	// Claims reports whether the job has failover on: only then does it
	// claim items, and only then are their claims read.
	Claims func() bool

	mu sync.Mutex
	// done are items whose runs of an ended generation completed (their
	// records written) before the live generation could fence a delete:
	// the next Sweep removes their nodes though the book still has them.
	done map[int]bool
}

// Sweep removes, before the job registers under live (no run of live's
// generation has marked or claimed anything yet), every running mark and
// failover claim of the job's items that live's session id owns from an
// earlier generation, but for the items busy says a run of that
// generation still holds (the book): those are removed as their runs end
// (AfterRun). It does nothing when the previous registration's session is
// not an earlier generation of live's (a new session id owns no node
// yet). The deletes are fenced on live's generation, each on the version
// read.
func (e *Ended) Sweep(ctx context.Context, prev, live *regcenter.Session, busy func(item int) bool) {
	if prev == nil || prev == live || prev.ID() != live.ID() {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	names, err := e.Center.Children(ctx, e.Paths.Execution())
	if err != nil {
		if !errors.Is(err, regcenter.ErrNoNode) {
			e.Log.Warn("reading the items for marks an ended session generation left", "err", err)
		}
		return
	}
	items := make([]int, 0, len(names))
	for _, n := range names {
		it, err := strconv.Atoi(n)
		if err != nil || it < 0 {
			continue
		}
		if busy(it) && !e.done[it] {
			continue
		}
		items = append(items, it)
	}
	if e.drop(ctx, live, items) {
		e.done = nil
	}
}

// AfterRun removes the running marks and claims of items, whose runs under
// ended have just written their completions without the fence (the
// generation had ended), when the live session is a later generation of
// the same id. The items are still reserved here, so no run of the live
// generation holds them. When the live generation cannot fence yet (it
// has not joined the job's election), the items are left to its Sweep.
func (e *Ended) AfterRun(ctx context.Context, ended, live *regcenter.Session, items []int) {
	if live == nil || live == ended || live.ID() != ended.ID() || len(items) == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.Fence(live); !ok {
		if e.done == nil {
			e.done = make(map[int]bool, len(items))
		}
		for _, it := range items {
			e.done[it] = true
		}
		return
	}
	e.drop(ctx, live, items)
}

// found is a node an ended generation left: its path and the version read.
type found struct {
	item    int
	path    string
	version int32
}

// drop reads the running mark and the claim of each of items and deletes
// those live's id owns and live's generation did not make, in
// transactions fenced on live's generation. It reports whether every one
// found was deleted (or was gone).
func (e *Ended) drop(ctx context.Context, live *regcenter.Session, items []int) bool {
	if len(items) == 0 {
		return true
	}
	fence, ok := e.Fence(live)
	if !ok {
		return false
	}
	per := make([][]found, len(items))
	claims := e.Claims()
	var readErr atomic.Bool
	parallel.Each(len(items), 32, func(i int) {
		it := items[i]
		p := e.Paths.ItemNode(it, layout.Running)
		data, st, err := e.Center.Get(ctx, p)
		switch {
		case errors.Is(err, regcenter.ErrNoNode):
		case err != nil:
			readErr.Store(true)
			return
		case st.EphemeralOwner == live.ID():
			// Made under live's generation only by a run of it, which
			// this sweep precedes or whose item is reserved: a mark
			// naming another generation, or none it can read, is left.
			if m, derr := stored.DecodeRunning(data); derr != nil || m.Session != live.String() {
				per[i] = append(per[i], found{item: it, path: p, version: st.Version})
			}
		}
		if !claims {
			return
		}
		c := e.Paths.ItemNode(it, layout.Failover)
		ok, st, err := e.Center.Exists(ctx, c)
		switch {
		case err != nil:
			readErr.Store(true)
		case ok && st.EphemeralOwner == live.ID():
			per[i] = append(per[i], found{item: it, path: c, version: st.Version})
		}
	})
	var all []found
	for _, f := range per {
		all = append(all, f...)
	}
	if len(all) == 0 {
		return !readErr.Load()
	}
	dels := make([]regcenter.DeleteOp, len(all))
	var gone []int
	for i, f := range all {
		dels[i] = regcenter.DeleteOp{Path: f.path, Version: f.version}
		if len(gone) == 0 || gone[len(gone)-1] != f.item {
			gone = append(gone, f.item)
		}
	}
	if _, err := deleteFenced(ctx, e.Center, fence, dels, true); err != nil {
		e.Log.Warn("removing the running marks and failover claims an ended session generation left", "err", err)
		return false
	}
	e.Log.Info("removed the running marks and failover claims an ended generation of this session left", "session", live.String(), "items", layout.FormatItems(gone))
	return !readErr.Load()
}
