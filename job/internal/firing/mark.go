package firing

import (
	"context"

	"github.com/shardjob/shardjob/internal/parallel"
	"github.com/shardjob/shardjob/job/internal/book"
	"github.com/shardjob/shardjob/job/internal/marks"
	"github.com/shardjob/shardjob/job/internal/records"
	"github.com/shardjob/shardjob/regcenter"
)

// The mark stage: the running marks of a run's items, made by the job's
// Marker (job/internal/marks), which hands every item it cannot mark back
// to the run (outcomes) as it meets it.

// Mark creates the running marks of f's items for its fire (see
// marks.Marker.Mark): checks go first in the first transaction, and if one
// fails it returns assume.ErrMoved. On an error it returns the items
// still reserved here, for the caller to release; items a later
// transaction could not mark are owed a misfire (or, for failover, handed
// back) and released, and the ones marked are returned without error.
//
// known, when not nil, holds what this instance knows of some items'
// completed records: each is checked (its version) in the transaction that
// marks its item, and one found changed is removed from the map, so that
// what stays is proved current as the item is marked (see StillOwed).
func (fr *Firer) Mark(ctx context.Context, f *Fire, checks []regcenter.Op, known map[int]records.Record) ([]int, error) {
	run := marks.Run{Sess: f.Sess, Fire: f.At, Kind: f.Kind.String(), Items: f.Items, Checks: checks, Records: known}
	return fr.Marker.Mark(ctx, run, outcomes{fr: fr, f: f})
}

// outcomes are a fire's answers for the items its marking meets that it
// cannot mark (marks.Outcomes).
type outcomes struct {
	fr *Firer
	f  *Fire
}

// RecordChanged: a scheduled fire's item was completed elsewhere since
// this fire read its record — perhaps this very fire, by the owner before
// a reshard. What this instance knew of the record is forgotten: a later
// fire proving it again would fail again. The item runs as a make-up run,
// which reads the record and runs only what it does not cover; a job that
// owes nothing for a fire it leaves (overlap or misfire skip) would drop
// this one, though the item was free, so its fire keeps the item and reads
// the record once it is marked, as other kinds do.
func (o outcomes) RecordChanged(item int) bool {
	o.fr.Records.Forget([]int{item})
	j := o.fr.Current()
	if o.f.Kind != book.Fire || j.Book.SkipsMissed {
		o.f.Recheck(item)
		return false
	}
	o.fr.Book.NoteMisfire(j.Book, item, o.f.At)
	o.fr.Release([]int{item})
	return true
}

// Recheck: see Fire.Recheck.
func (o outcomes) Recheck(item int) { o.f.Recheck(item) }

// Busy: the items run elsewhere (or still from an earlier fire). A
// failover run gives its claims back rather than hold them while the items
// run elsewhere: the queue entries still record the debts. Any other run
// owes the fire before the items are free again here — a fire reserving
// one in between must see the debt, or it would run as a plain fire and
// the debt's run would run that fire again — and waits for the marks to
// go.
func (o outcomes) Busy(ctx context.Context, items []int) {
	fr, f := o.fr, o.f
	if f.Kind == book.Backfill {
		fr.Release(items) // the backfill tries the fire again
		return
	}
	if f.Kind == book.Failover {
		fr.Claimer.HandBack(ctx, f.Sess, items)
		fr.Release(items)
		return
	}
	j := fr.Current()
	for _, it := range items {
		fr.Book.NoteUnrun(j.Book, it, f.At)
	}
	fr.Release(items)
	if len(items) == 1 {
		fr.oweRemote(ctx, items[0], f.At)
		return
	}
	parallel.Each(len(items), 32, func(i int) { fr.oweRemote(ctx, items[i], f.At) })
}

// Unmarked: items that could not be marked are handed back (a failover
// run: its queue entries stay, for a retry) or owed a misfire, and
// released.
func (o outcomes) Unmarked(ctx context.Context, items []int) {
	fr, f := o.fr, o.f
	switch f.Kind {
	case book.Backfill: // the backfill tries the fire again
	case book.Failover:
		fr.Claimer.HandBack(ctx, f.Sess, items)
	default:
		j := fr.Current()
		for _, it := range items {
			fr.Book.NoteUnrun(j.Book, it, f.At)
		}
	}
	fr.Release(items)
}
