package records

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/journal"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
)

// Reader reads one job's completed records from the registry: every
// reader of records (a new owner's gaps, a make-up run's narrowing, a
// failover claim, a completion's re-read) goes through Node, which adds
// what another process's completion journal says of the item.
type Reader struct {
	Center regcenter.Center
	Paths  layout.Job
	Job    string // the job's name, as journals key its entries
	Own    string // this process's journal ("" when it keeps none)
	Log    *slog.Logger
	// Report reports a node whose value does not decode, with msg and
	// args (once per version of the node: stored.BadValues).
	Report func(p string, st regcenter.Stat, data []byte, msg string, args ...any)
}

// Foreign reports whether journal names another process's completion
// journal.
func (rd *Reader) Foreign(journal string) bool {
	return journal != "" && journal != rd.Own
}

// Node reads item's completed node: what it says ran (nothing if there is
// no node, or garbage in it) and its version, when it exists. A record
// that names another process's journal (Foreign) adds what that journal
// says of the item, by sched (nil: nothing added).
func (rd *Reader) Node(ctx context.Context, item int, sched fireplan.Schedule) (Record, error) {
	p := rd.Paths.ItemNode(item, layout.Completed)
	data, st, err := rd.Center.Get(ctx, p)
	if errors.Is(err, regcenter.ErrNoNode) {
		return Record{}, nil
	}
	if err != nil {
		return Record{}, err
	}
	rec := Record{Version: st.Version, Versioned: true}
	m, err := stored.DecodeCompleted(data)
	if err != nil {
		rd.Report(p, st, data, "garbage in completed node; treating the item as not completed", "item", item, "err", err)
		return rec, nil
	}
	rec.Cover, rec.Failed, rec.Journal = m.Cover(), m.Failed, m.Journal
	if rd.Foreign(m.Journal) {
		rec.Foreign = true
		rec, err = rd.journalled(ctx, item, m.Journal, rec, sched)
	}
	if rd.Log.Enabled(ctx, slog.LevelDebug) {
		rd.Log.Debug("record read", "item", item, "version", st.Version, "writer", m.Server, "journal", m.Journal,
			"node_through", time.UnixMilli(m.Fire), "through", rec.Through(), "err", err)
	}
	return rec, err
}

// journalled adds to rec, read from item's completed node, what journal
// id, another process's, says of the item: nothing when the journal or
// the entry is not there, or does not decode (a journal is only ever an
// addition to a record).
func (rd *Reader) journalled(ctx context.Context, item int, id string, rec Record, sched fireplan.Schedule) (Record, error) {
	ran, err := journal.Read(ctx, rd.Center, id, rd.Job, item)
	if err != nil {
		return rec, err
	}
	if len(ran) == 0 || sched == nil {
		return rec, nil
	}
	rec.Cover = rec.Cover.Union(sched, stored.RanCover(ran))
	return rec, nil
}

// Read is Node with what a record deferred here adds to it (c's pending
// record of the item, Cache.PendingCover): the record as this instance's
// own readers take it (sched nil: nothing added).
func (rd *Reader) Read(ctx context.Context, item int, sched fireplan.Schedule, c *Cache) (Record, error) {
	rec, err := rd.Node(ctx, item, sched)
	if err != nil {
		return rec, err
	}
	if p, ok := c.PendingCover(item); ok && sched != nil {
		rec.Cover = rec.Cover.Union(sched, p)
	}
	return rec, nil
}

// Names is the completion journal a record of an item names when written
// over a node that names nodeJournal. The instance that keeps the item
// marked (holds) names its own when its completions go there
// (journalled): its next ones will, leaving the node behind. Any other
// writer keeps naming another process's journal the node names — that
// process may hold the item and journal its completions, which the node's
// readers must go on finding — and names none otherwise: what it
// journalled of the item is in the record it writes.
func (rd *Reader) Names(holds, journalled bool, nodeJournal string) string {
	if holds && journalled {
		return rd.Own
	}
	if rd.Foreign(nodeJournal) {
		return nodeJournal
	}
	return ""
}
