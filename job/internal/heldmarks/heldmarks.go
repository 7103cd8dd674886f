// Package heldmarks keeps a job's held running marks. A running mark (execution/{item}/running) that this instance
// made for a run of an item it is assigned stays after the run, for the
// fires after it, as long as the assignment stands. A fire of held items
// marks nothing and, on an assumption its watches prove, sends nothing
// before its runs; its completion writes the record without deleting the
// mark. The mark still excludes every other run of the item:
// another instance's create fails while this one holds it, as it did while
// a run was going, and a dead instance's marks go with its session. It is
// deleted when the item stops being this instance's to run — the sharding
// node's watch reports a change (ReleaseMoved), a fire reads an assignment
// without it (ReleaseUnassigned), a completion finds the assumption gone,
// the job stops here — and never while a run here has the item reserved.
//
// It owns no state of its own: the marks held are assume.Holds', the
// runs reserved the book's, the records deferred under the marks the
// completion stage's. It calls those rooms and the marks' registry
// operations (job/internal/marks), never the runner.
package heldmarks

import (
	"context"
	"errors"
	"log/slog"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/assume"
	"github.com/shardjob/shardjob/job/internal/book"
	"github.com/shardjob/shardjob/job/internal/completion"
	"github.com/shardjob/shardjob/job/internal/marks"
	"github.com/shardjob/shardjob/job/internal/records"
	"github.com/shardjob/shardjob/regcenter"
)

// Keeper keeps one job's held marks on this instance. Its fields are set
// once, before its first use (Done may be set after the Completer that
// takes KeepAfter is made).
type Keeper struct {
	RC       regcenter.Center
	Paths    layout.Job
	ServerID string
	Held     *assume.Holds         // the marks held, by session
	Assumed  *assume.Cache         // the assignment the next fire assumes
	Book     *book.Book            // the runs reserved here
	Records  *records.Cache        // the records deferred under the marks
	Done     *completion.Completer // writes those records before a mark goes
	// Fence returns the operation that fences a transaction on sess's
	// generation (election.Election.SessionFence), false when sess is
	// not the generation's.
	Fence func(sess *regcenter.Session) (regcenter.Op, bool)
	Log   *slog.Logger
}

// Release deletes the held marks of the items keep does not keep (all
// of them when keep is nil) that no run here has reserved, in transactions
// fenced on sess's generation: a delete the client replays on a later
// session must not remove a mark another instance made meanwhile. A mark
// that cannot be deleted is forgotten all the same: it goes with the
// session, and a fire here that meets it again removes it as stale (the
// Marker, job/internal/marks).
func (k *Keeper) Release(ctx context.Context, sess *regcenter.Session, keep func(int) bool) {
	give := func(it int) bool { return (keep == nil || !keep(it)) && !k.Book.IsRunning(it) }
	k.Held.Release(sess, give, func(stale bool, gone []int) {
		if stale {
			// An ended generation's marks: not ours to delete now. The
			// records deferred under them are written all the same, for
			// the items keep gives up: whoever takes one next reads its
			// record.
			if k.Records.HasPending() {
				k.Done.FlushReleased(ctx, func(it int) bool { return keep == nil || !keep(it) })
			}
			return
		}
		k.deleteHeld(ctx, sess, gone)
	})
}

// deleteHeld deletes the held marks of gone, given up under sess (see
// Release), the records deferred under them written first.
func (k *Keeper) deleteHeld(ctx context.Context, sess *regcenter.Session, gone []int) {
	// The records deferred while the marks were held are written before
	// the marks go: whoever takes an item next reads them.
	if k.Records.HasPending() {
		goneSet := make(map[int]bool, len(gone))
		for _, it := range gone {
			goneSet[it] = true
		}
		k.Done.FlushReleased(ctx, func(it int) bool { return goneSet[it] })
	}
	fence, ok := k.Fence(sess)
	if !ok {
		return
	}
	if failed, err := marks.DeleteHeld(ctx, k.RC, k.Paths, fence, gone); err != nil {
		k.Log.Warn("releasing held running marks; they go with the session", "items", layout.FormatItems(failed), "err", err)
		return
	}
	k.Log.Debug("released held running marks", "items", layout.FormatItems(gone))
}

// KeepAfter returns which of batch's items keep their marks after their
// runs under sess: held here, still this instance's by the assumption the
// next fire makes, and the job not stopping. The others' marks are
// deleted by the completion, and forgotten here. So is the mark of a
// trigger's run: a trigger writes no record, and a mark no record covers
// reads as a run still going (the console, `shardjob status`).
func (k *Keeper) KeepAfter(sess *regcenter.Session, batch []completion.Result) map[int]bool {
	stopping := k.Book.Stopping()
	items := make([]int, 0, len(batch))
	for _, b := range batch {
		if b.Halted == nil && b.Kind.Recorded() && !stopping {
			items = append(items, b.Item)
		}
	}
	held := k.Held.HeldOf(sess, items)
	k.Assumed.KeepAssigned(sess, held)
	var drop []int
	for _, b := range batch {
		if !held[b.Item] {
			drop = append(drop, b.Item)
		}
	}
	if len(drop) > 0 {
		k.Held.Drop(drop)
	}
	return held
}

// ReleaseUnassigned releases the held marks of items not in items, the
// assignment a fire under sess has just read.
func (k *Keeper) ReleaseUnassigned(ctx context.Context, sess *regcenter.Session, items []int) {
	if k.Held.Count(sess) == 0 {
		return
	}
	assigned := make(map[int]bool, len(items))
	for _, it := range items {
		assigned[it] = true
	}
	k.Release(ctx, sess, func(it int) bool { return assigned[it] })
}

// Verify checks, on the reconcile loop's round, that the marks this
// instance holds under sess are still there and its own. One removed by
// hand, or replaced by a node of another owner, is forgotten: the item's
// next fire marks it again, and meets any node left in its place
// (the marker removes one nobody's session holds). Until the round, a
// held item whose mark an operator removed runs on a mark that is gone —
// as a run did before when its mark was removed under it — so the round
// bounds that window by the reconcile interval.
//
// The loop reads every job's nodes at once: Verify returns the paths to
// read (none when no mark is held) and the check of what was read there.
func (k *Keeper) Verify(sess *regcenter.Session) (paths []string, check func([]regcenter.NodeData)) {
	items := k.Held.Items(sess)
	if len(items) == 0 {
		return nil, func([]regcenter.NodeData) {}
	}
	return marks.RunningPaths(k.Paths, items), func(nodes []regcenter.NodeData) {
		lost := marks.Lost(sess, items, nodes)
		if len(lost) == 0 {
			return
		}
		k.Log.Warn("held running marks removed or replaced by hand; the items' next fires mark them again", "items", layout.FormatItems(lost))
		k.Held.Drop(lost)
	}
}

// ReleaseMoved answers an event of this instance's sharding-node watch
// while it keeps marks: it reads the assignment and releases the marks of
// the items no longer in it, at once rather than at this instance's next
// fire, which may be far off (a reshard done at another instance's fire
// moves items whose new owner waits for their marks). Garbage in the node,
// or a failed read, releases nothing: the next fire reads for itself.
// Call it only while the keeper holds marks under sess (Held.Count).
func (k *Keeper) ReleaseMoved(ctx context.Context, sess *regcenter.Session) {
	data, _, err := k.RC.Get(ctx, k.Paths.Flag(k.ServerID, layout.Sharding))
	var items []int
	switch {
	case errors.Is(err, regcenter.ErrNoNode):
	case err != nil:
		return
	default:
		if items, err = layout.ParseItems(string(data)); err != nil {
			return
		}
	}
	k.ReleaseUnassigned(ctx, sess, items)
}
