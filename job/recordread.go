package job

import (
	"context"
	"errors"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// Reading an item's completed record: every reader of records (a new
// owner's gaps, a make-up run's narrowing, a failover claim, a
// completion's re-read) goes through readRecordNode, which adds what
// another process's completion journal says of the item (journal.go).

// completedFire returns the fire an item last completed (zero if none).
func (r *runner) completedFire(ctx context.Context, item int) (time.Time, error) {
	c, err := r.completedCover(ctx, item)
	return c.Through(), err
}

// completedCover reads the item's completed node (zero if none, or
// garbage).
func (r *runner) completedCover(ctx context.Context, item int) (cover, error) {
	rec, err := r.readRecord(ctx, item)
	return rec.cover, err
}

// readRecord reads the item's completed node: what it says ran (nothing if
// there is no node, or garbage in it) and its version, when it exists —
// with what a record deferred here adds to it (recordflush.go).
func (r *runner) readRecord(ctx context.Context, item int) (record, error) {
	rec, err := r.readRecordNode(ctx, item)
	if err != nil {
		return rec, err
	}
	if p, ok := r.records.pendingCover(item); ok {
		if sched, _, serr := r.config().Schedule(); serr == nil {
			rec.cover = rec.cover.Union(sched, p)
		}
	}
	return rec, nil
}

// readRecordNode is readRecord without the records deferred here.
func (r *runner) readRecordNode(ctx context.Context, item int) (record, error) {
	data, st, err := r.rc.Get(ctx, r.paths.ItemNode(item, layout.Completed))
	if errors.Is(err, regcenter.ErrNoNode) {
		return record{}, nil
	}
	if err != nil {
		return record{}, err
	}
	rec := record{version: st.Version, versioned: true}
	m, err := decodeCompleted(data)
	if err != nil {
		r.reportBad(r.paths.ItemNode(item, layout.Completed), st, "garbage in completed node; treating the item as not completed",
			"item", item, "data", quoteShort(string(data)), "err", err)
		return rec, nil
	}
	rec.cover, rec.failed = coverOf(m), m.Failed
	if m.Journal != "" && (r.s.journal == nil || m.Journal != r.s.journal.id) {
		rec.foreign = true
		return r.journalled(ctx, item, m.Journal, rec)
	}
	return rec, nil
}
