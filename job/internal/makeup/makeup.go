// Package makeup does the registry work of a job's make-up runs on this
// instance: it narrows a make-up run (misfire or failover) to the fires
// its items' records do not list, and writes the misfire node of an item
// that missed a fire because it ran elsewhere.
//
// A make-up run stands for every fire its item owes since its debt began.
// The item's completed node, which every run's completion writes before
// its mark goes, lists which fires earlier runs covered — here or on
// another instance (a previous owner paying its own debt after a reshard
// moved the item, a failover claimer) — and those are not run again. A
// misfire node is the registry's copy of a debt: written once per debt,
// it lets the item's next owner find the debt after a reshard.
//
// It owns nothing: the debts and the waits on marks elsewhere are the
// book's (job/internal/book), the records known here the records cache's,
// the runs the runner's. It calls the book, the records reader and cache
// and the registry, never the runner: the runner keeps the fire order, the
// runs themselves and the watch on a mark held elsewhere.
package makeup

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/internal/parallel"
	"github.com/shardjob/shardjob/job/internal/book"
	"github.com/shardjob/shardjob/job/internal/completion"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/records"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
)

// readers is how many of a run's reads are in flight at once.
const readers = 32

// Debts does the registry work of one job's make-up runs here. Its fields
// are set once, before its first use.
type Debts struct {
	RC      regcenter.Center
	Paths   layout.Job
	Book    *book.Book      // the debts, the runs reserved here, the waits on marks elsewhere
	Records *records.Reader // reads an item's completed node
	Known   *records.Cache  // the records as known here: what is read is noted
	Log     *slog.Logger
}

// Run is a make-up run as Narrow takes it: reserved here, its items
// marked.
type Run struct {
	Job   book.Job  // the job as the run's fire took it
	At    time.Time // the run's fire
	Kind  book.Kind // Misfire or Failover
	Items []int
	// Fires holds the items whose run starts at another fire than At
	// (book.Book.AbsorbDebts); Narrow does not change it.
	Fires map[int]time.Time
	// Read is the schedule the records are read with (records.Reader.Read):
	// the job's as it is now.
	Read fireplan.Schedule
}

// Narrowed is what Narrow found of a run's items.
type Narrowed struct {
	Todo []int // the items to run
	// Starts holds the items of Todo narrowed to start at a later fire
	// than the run's (Run.Fires' or Run.At): the first fire each runs.
	Starts map[int]time.Time
	// Priors are the records read, which the runs' completions add to.
	Priors map[int]records.Record
	// Settled are the items whose every owed fire is covered: settled
	// without running.
	Settled []completion.Result
}

// Narrow narrows run to the fires its items still owe, now that this
// instance holds their running marks. An item whose every owed fire is
// covered by its record is settled without running; the others run the
// first stretch of fires not covered (Book.Narrow), and a later uncovered
// fire stays owed. An item's record in proven (proved current when the
// item was marked) is not read again; one that cannot be read runs (at
// least once beats a lost fire).
func (d *Debts) Narrow(ctx context.Context, run Run, proven map[int]records.Record) Narrowed {
	items := run.Items
	covers := make([]records.Record, len(items))
	errs := make([]error, len(items))
	parallel.Each(len(items), readers, func(i int) {
		if rec, ok := proven[items[i]]; ok {
			if d.Log.Enabled(ctx, slog.LevelDebug) {
				d.Log.Debug("owed item's record proved by its version", "item", items[i], "version", rec.Version, "through", rec.Through())
			}
			covers[i] = rec
			return
		}
		covers[i], errs[i] = d.Records.Read(ctx, items[i], run.Read, d.Known)
	})
	var n Narrowed
	n.Priors = map[int]records.Record{}
	for i, it := range items {
		since := run.At
		if f, ok := run.Fires[it]; ok {
			since = f
		}
		c := covers[i]
		if errs[i] != nil {
			// Cannot tell: run it (at least once beats a lost fire).
			d.Log.Warn("reading an owed item's last completed fire", "item", it, "err", errs[i])
			n.Todo = append(n.Todo, it)
			continue
		}
		n.Priors[it] = c
		if _, ok := proven[it]; !ok {
			// Kept as read: it may list fires after this run's, which
			// the item's later fires here must not run again (ranBefore).
			d.Known.Read(it, c)
		}
		first, last, rest, upTo := d.Book.Narrow(run.Job, it, since, c.Cover)
		switch {
		case first.IsZero():
			d.Log.Info("owed run already made up for; settled without running", "item", it, "kind", run.Kind.String(), "since", since, "completed", c.Through())
			now := time.Now()
			n.Settled = append(n.Settled, completion.Result{Item: it, Fire: since, Through: upTo, Kind: run.Kind, Begin: now, End: now, Settled: true})
		case !first.Equal(since) || !last.Equal(upTo):
			if n.Starts == nil {
				n.Starts = map[int]time.Time{}
			}
			n.Starts[it] = first
			d.Log.Info("owed run narrowed to the fires its item's record does not list", "item", it, "kind", run.Kind.String(), "since", since, "through", upTo, "runs", first, "to", last, "still_owed", rest)
			n.Todo = append(n.Todo, it)
		default:
			n.Todo = append(n.Todo, it)
		}
	}
	return n
}

// OweRemote notes in the book that item missed the fire at because
// another instance (or an earlier fire) still runs it, and writes the
// item's misfire node unless this instance has written it for the debt
// (one that exists already is kept). It reports whether the caller is to
// wait for the item's running mark to go, and then run it once: false
// when a wait is set already, or the job drops missed fires (nothing is
// owed).
func (d *Debts) OweRemote(ctx context.Context, j book.Job, item int, at time.Time) (wait bool) {
	if j.SkipsMissed {
		return false
	}
	since, haveNode, waiting := d.Book.OweRemote(j, item, at)
	if !haveNode {
		data := stored.Misfire{Since: since.UnixMilli()}.Marshal()
		_, err := d.RC.Create(ctx, d.Paths.ItemNode(item, layout.Misfire), data, regcenter.Persistent)
		if err == nil || errors.Is(err, regcenter.ErrNodeExists) {
			d.Book.WroteMisfireNode(item)
		} else {
			d.Log.Warn("recording misfire", "item", item, "err", err)
		}
	}
	return !waiting
}
