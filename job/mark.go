package job

import (
	"context"
	"time"

	"github.com/shardjob/shardjob/internal/parallel"
	"github.com/shardjob/shardjob/job/internal/book"
	"github.com/shardjob/shardjob/job/internal/marks"
	"github.com/shardjob/shardjob/regcenter"
)

// The mark stage: the running marks of a run's items, made by the
// job's Marker (job/internal/marks), which hands every item it cannot
// mark back to the run (markOutcomes) as it meets it.

// markGoneWait is Marker.GoneWait: how long a marking transaction that
// met another instance's mark waits, once, for it to go (a test
// lengthens it).
var markGoneWait = 250 * time.Millisecond

// newMarker returns the runner's Marker.
func (r *runner) newMarker() *marks.Marker {
	return &marks.Marker{Center: r.rc, Paths: r.paths, Server: r.serverID(), Log: r.log,
		Holds: &r.holds, Cache: r.records, Fence: r.elect.SessionFence, GoneWait: markGoneWait}
}

// markRunning creates the running marks of f's items for its fire (see
// marks.Marker.Mark): checks go first in the first transaction, and if one
// fails it returns assume.ErrMoved. On an error it returns the items
// still reserved here, for the caller to release; items a later
// transaction could not mark are owed a misfire (or, for failover, handed
// back) and released, and the ones marked are returned without error.
//
// records, when not nil, holds what this instance knows of some items'
// completed records: each is checked (its version) in the transaction that
// marks its item, and one found changed is removed from the map, so that
// what stays is proved current as the item is marked (see firing.Firer.StillOwed).
//
// out answers for the items the marking cannot mark (markOutcomes).
func (r *runner) markRunning(ctx context.Context, f *fire, checks []regcenter.Op, records map[int]record, out marks.Outcomes) ([]int, error) {
	run := marks.Run{Sess: f.Sess, Fire: f.At, Kind: f.Kind.String(), Items: f.Items, Checks: checks, Records: records}
	return r.marker.Mark(ctx, run, out)
}

// markOutcomes are a fire's answers for the items its marking meets that
// it cannot mark (marks.Outcomes).
type markOutcomes struct {
	r *runner
	f *fire
}

// RecordChanged: a scheduled fire's item was completed elsewhere since
// this fire read its record — perhaps this very fire, by the owner before
// a reshard. The item runs as a make-up run, which reads the record and
// runs only what it does not cover. Other kinds read the record once the
// item is marked.
func (o markOutcomes) RecordChanged(item int) bool {
	if o.f.Kind != book.Fire {
		return false
	}
	o.r.book.NoteMisfire(o.r.config().book, item, o.f.At)
	o.r.release([]int{item})
	return true
}

// Recheck: see fire.recheck.
func (o markOutcomes) Recheck(item int) { o.f.Recheck(item) }

// Busy: the items run elsewhere (or still from an earlier fire). A
// failover run gives its claims back rather than hold them while the items
// run elsewhere: the queue entries still record the debts. Any other run
// owes the fire before the items are free again here — a fire reserving
// one in between must see the debt, or it would run as a plain fire and
// the debt's run would run that fire again — and waits for the marks to
// go.
func (o markOutcomes) Busy(ctx context.Context, items []int) {
	r, f := o.r, o.f
	if f.Kind == book.Backfill {
		r.release(items) // the backfill tries the fire again
		return
	}
	if f.Kind == book.Failover {
		r.claimer.HandBack(ctx, f.Sess, items)
		r.release(items)
		return
	}
	cfg := r.config()
	for _, it := range items {
		r.book.NoteUnrun(cfg.book, it, f.At)
	}
	r.release(items)
	if len(items) == 1 {
		r.owesMisfireRemote(ctx, items[0], f.At)
		return
	}
	parallel.Each(len(items), 32, func(i int) { r.owesMisfireRemote(ctx, items[i], f.At) })
}

// Unmarked: items that could not be marked are handed back (a failover
// run: its queue entries stay, for a retry) or owed a misfire, and
// released.
func (o markOutcomes) Unmarked(ctx context.Context, items []int) {
	r, f := o.r, o.f
	switch f.Kind {
	case book.Backfill: // the backfill tries the fire again
	case book.Failover:
		r.claimer.HandBack(ctx, f.Sess, items)
	default:
		cfg := r.config()
		for _, it := range items {
			r.book.NoteUnrun(cfg.book, it, f.At)
		}
	}
	r.release(items)
}
