package job

import (
	"context"
	"errors"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/marks"
	"github.com/shardjob/shardjob/regcenter"
)

// Held marks: a running mark (execution/{item}/running) that this instance
// made for a run of an item it is assigned stays after the run, for the
// fires after it, as long as the assignment stands. A fire of held items
// marks nothing and, on an assumption its watches prove, sends nothing
// before its runs; its completion writes the record without deleting the
// mark. The mark still excludes every other run of the item:
// another instance's create fails while this one holds it, as it did while
// a run was going, and a dead instance's marks go with its session. It is
// deleted when the item stops being this instance's to run — the sharding
// node's watch reports a change (releaseMoved), a fire reads an assignment
// without it (releaseUnassigned), a completion finds the assumption gone,
// the job stops here — and never while a run here has the item reserved.

// releaseHolds deletes the held marks of the items keep does not keep (all
// of them when keep is nil) that no run here has reserved, in transactions
// fenced on sess's generation: a delete the client replays on a later
// session must not remove a mark another instance made meanwhile. A mark
// that cannot be deleted is forgotten all the same: it goes with the
// session, and a fire here that meets it again removes it as stale (the
// Marker, job/internal/marks).
func (r *runner) releaseHolds(ctx context.Context, sess *regcenter.Session, keep func(int) bool) {
	give := func(it int) bool { return (keep == nil || !keep(it)) && !r.book.IsRunning(it) }
	r.holds.Release(sess, give, func(stale bool, gone []int) {
		if stale {
			// An ended generation's marks: not ours to delete now. The
			// records deferred under them are written all the same, for
			// the items keep gives up: whoever takes one next reads its
			// record.
			if r.records.HasPending() {
				r.done.FlushReleased(ctx, func(it int) bool { return keep == nil || !keep(it) })
			}
			return
		}
		r.deleteHeld(ctx, sess, gone)
	})
}

// deleteHeld deletes the held marks of gone, given up under sess (see
// releaseHolds), the records deferred under them written first.
func (r *runner) deleteHeld(ctx context.Context, sess *regcenter.Session, gone []int) {
	// The records deferred while the marks were held are written before
	// the marks go: whoever takes an item next reads them.
	if r.records.HasPending() {
		goneSet := make(map[int]bool, len(gone))
		for _, it := range gone {
			goneSet[it] = true
		}
		r.done.FlushReleased(ctx, func(it int) bool { return goneSet[it] })
	}
	fence, ok := r.elect.SessionFence(sess)
	if !ok {
		return
	}
	if failed, err := marks.DeleteHeld(ctx, r.rc, r.paths, fence, gone); err != nil {
		r.log.Warn("releasing held running marks; they go with the session", "items", layout.FormatItems(failed), "err", err)
		return
	}
	r.log.Debug("released held running marks", "items", layout.FormatItems(gone))
}

// keepsHolds returns which of batch's items keep their marks after their
// runs under sess: held here, still this instance's by the assumption the
// next fire makes, and the job not stopping. The others' marks are
// deleted by the completion, and forgotten here. So is the mark of a
// trigger's run: a trigger writes no record, and a mark no record covers
// reads as a run still going (the console, `shardjob status`).
func (r *runner) keepsHolds(sess *regcenter.Session, batch []itemResult) map[int]bool {
	stopping := r.book.Stopping()
	items := make([]int, 0, len(batch))
	for _, b := range batch {
		if b.Halted == nil && b.Kind.Recorded() && !stopping {
			items = append(items, b.Item)
		}
	}
	held := r.holds.HeldOf(sess, items)
	r.cache.KeepAssigned(sess, held)
	var drop []int
	for _, b := range batch {
		if !held[b.Item] {
			drop = append(drop, b.Item)
		}
	}
	if len(drop) > 0 {
		r.holds.Drop(drop)
	}
	return held
}

// releaseUnassigned releases the held marks of items not in items, the
// assignment a fire under sess has just read.
func (r *runner) releaseUnassigned(ctx context.Context, sess *regcenter.Session, items []int) {
	if r.holds.Count(sess) == 0 {
		return
	}
	assigned := make(map[int]bool, len(items))
	for _, it := range items {
		assigned[it] = true
	}
	r.releaseHolds(ctx, sess, func(it int) bool { return assigned[it] })
}

// verifyHolds checks, on the reconcile loop's round, that the marks this
// instance holds under sess are still there and its own. One removed by
// hand, or replaced by a node of another owner, is forgotten: the item's
// next fire marks it again, and meets any node left in its place
// (the marker removes one nobody's session holds). Until the round, a
// held item whose mark an operator removed runs on a mark that is gone —
// as a run did before when its mark was removed under it — so the round
// bounds that window by the reconcile interval.
func (r *runner) verifyHolds(ctx context.Context, sess *regcenter.Session) {
	items := r.holds.Items(sess)
	if len(items) == 0 {
		return
	}
	lost, err := marks.NotHeld(ctx, r.rc, r.paths, sess, items)
	if err != nil || len(lost) == 0 {
		return // a failed read: the next round
	}
	r.log.Warn("held running marks removed or replaced by hand; the items' next fires mark them again", "items", layout.FormatItems(lost))
	r.holds.Drop(lost)
}

// releaseMoved answers an event of this instance's sharding-node watch
// while it keeps marks: it reads the assignment and releases the marks of
// the items no longer in it, at once rather than at this instance's next
// fire, which may be far off (a reshard done at another instance's fire
// moves items whose new owner waits for their marks). Garbage in the node,
// or a failed read, releases nothing: the next fire reads for itself.
func (r *runner) releaseMoved() {
	sess := r.rc.Session()
	if r.holds.Count(sess) == 0 {
		return
	}
	ctx, cancel := r.coordCtx(sess)
	defer cancel()
	data, _, err := r.rc.Get(ctx, r.paths.Flag(r.serverID(), layout.Sharding))
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
	r.releaseUnassigned(ctx, sess, items)
}
