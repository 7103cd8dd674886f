package job

import (
	"context"
	"time"

	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/records"
	"github.com/shardjob/shardjob/regcenter"
)

// cover is what an item's completed record says ran (fireplan.Cover).
type cover = fireplan.Cover

// record is an item's completed node as this instance last read or wrote
// it (records.Record): what it says ran, its version, the failed runs it
// lists.
type record = records.Record

// Reading an item's completed record: every reader of records (a new
// owner's gaps, a make-up run's narrowing, a failover claim, a
// completion's re-read) goes through readRecordNode, the job's
// records.Reader, which adds what another process's completion journal
// says of the item.

// completedFire returns the fire an item last completed (zero if none).
func (r *runner) completedFire(ctx context.Context, item int) (time.Time, error) {
	c, err := r.completedCover(ctx, item)
	return c.Through(), err
}

// completedCover reads the item's completed node (zero if none, or
// garbage).
func (r *runner) completedCover(ctx context.Context, item int) (cover, error) {
	rec, err := r.readRecord(ctx, item)
	return rec.Cover, err
}

// readRecord reads the item's completed node: what it says ran (nothing if
// there is no node, or garbage in it) and its version, when it exists —
// with what a record deferred here adds to it (recordflush.go).
func (r *runner) readRecord(ctx context.Context, item int) (record, error) {
	rec, err := r.readRecordNode(ctx, item)
	if err != nil {
		return rec, err
	}
	if p, ok := r.records.PendingCover(item); ok {
		if sched, _, serr := r.config().Schedule(); serr == nil {
			rec.Cover = rec.Cover.Union(sched, p)
		}
	}
	return rec, nil
}

// readRecordNode is readRecord without the records deferred here
// (records.Reader.Node).
func (r *runner) readRecordNode(ctx context.Context, item int) (record, error) {
	var sched fireplan.Schedule
	if s, _, err := r.config().Schedule(); err == nil {
		sched = s
	}
	return r.reader.Node(ctx, item, sched)
}

// foreignJournal reports whether journal names another process's
// completion journal.
func (r *runner) foreignJournal(journal string) bool { return r.reader.Foreign(journal) }

// recordJournal is the completion journal a record of an item names when
// written over a node that names nodeJournal. The instance that keeps the
// item marked names its own when its completions go there (journalled):
// its next ones will, leaving the node behind. Any other writer keeps
// naming another process's journal the node names — that process may hold
// the item and journal its completions, which the node's readers must go
// on finding — and names none otherwise: what it journalled of the item is
// in the record it writes.
func (r *runner) recordJournal(holds, journalled bool, nodeJournal string) string {
	if holds && journalled {
		return r.reader.Own
	}
	if r.foreignJournal(nodeJournal) {
		return nodeJournal
	}
	return ""
}

// newReader returns the runner's records.Reader.
func (r *runner) newReader() *records.Reader {
	own := ""
	if r.s.journal != nil {
		own = r.s.journal.ID()
	}
	return &records.Reader{Center: r.rc, Paths: r.paths, Job: r.name, Own: own, Log: r.log, Report: r.reportBadValue}
}

// reportBadValue is reportBad without its answer, as the rooms that read
// nodes for the runner (records.Reader, reshard.ReadDebt) take a reporter.
func (r *runner) reportBadValue(p string, st regcenter.Stat, data []byte, msg string, args ...any) {
	r.reportBad(p, st, data, msg, args...)
}
