package main

import (
	"context"
	"errors"
	"time"

	"github.com/shardjob/shardjob/internal/admin"
	"github.com/shardjob/shardjob/internal/backfill"
	"github.com/shardjob/shardjob/tools/chaos/eventlog"
)

// backfillWait bounds how long the harness waits, after the settle, for
// its backfill to be through.
const backfillWait = 3 * time.Minute

// backfillRate is the backfill's fires a second on each instance: slow
// enough that it runs through the faults, beside the live fires.
const backfillRate = 4

// backfillFires bounds the backfill's range: the last this many fires
// (one a second) before it starts. Beside a live schedule whose every run
// works 400 ms of each second, a backfill runs about one item-fire a
// second per instance (see docs/performance.md): 30 fires of 6 items take
// a few minutes, within a ten-minute run's faults.
const backfillFires = 30

// runBackfill starts, a quarter into the faults, a backfill of the first
// job over the last backfillFires fires since measured (the run's
// MeasureStart), logs it,
// and polls its status until every item is through (logged too) or ctx
// ends. A failure to start or read is a note: the analysis then finds the
// backfill not through.
func (h *harness) runBackfill(ctx context.Context, measured time.Time) {
	if sleepCtx(ctx, h.cfg.Duration/4) != nil {
		return
	}
	adm := admin.New(h.rc, admin.JobCodec(false))
	to := time.Now().Add(-2 * time.Second).Truncate(time.Second)
	from := measured.Add(h.cfg.Warmup).Truncate(time.Second).Add(time.Second)
	if earliest := to.Add(-(backfillFires - 1) * time.Second); from.Before(earliest) {
		from = earliest
	}
	// Started, or found running: an attempt whose answer a registry fault
	// lost (or that could not tell the servers) started it, and only this
	// harness starts backfills. Then every server is told (again).
	for attempt := 1; ; attempt++ {
		_, err := adm.StartBackfill(ctx, jobName, admin.Backfill{From: from, To: to, Rate: backfillRate, By: "chaos"})
		if err == nil || errors.Is(err, admin.ErrConflict) {
			break
		}
		h.note("starting the backfill (attempt %d): %v", attempt, err)
		if sleepCtx(ctx, 2*time.Second) != nil {
			return
		}
	}
	var req backfill.Request
	for attempt := 1; ; attempt++ {
		_, err := adm.ResumeBackfill(ctx, jobName)
		if err == nil {
			var st admin.BackfillStatus
			if st, err = adm.BackfillStatus(ctx, jobName); err == nil {
				req = st.Request
				break
			}
		}
		h.note("telling the servers of the backfill (attempt %d): %v", attempt, err)
		if sleepCtx(ctx, 2*time.Second) != nil {
			return
		}
	}
	id := req.ID
	from, to = req.FromTime(), req.ToTime()
	h.event(eventlog.Event{Ev: eventlog.BackfillStart, Fire: from.UnixMilli(), Through: to.UnixMilli(), Detail: id})
	h.progress("backfill %s of %s started: fires %s to %s", id, jobName, from.Format(time.TimeOnly), to.Format(time.TimeOnly))
	for sleepCtx(ctx, 2*time.Second) == nil {
		st, err := adm.BackfillStatus(ctx, jobName)
		if err != nil {
			continue // a registry fault: read again
		}
		if st.State == admin.StateThrough {
			h.event(eventlog.Event{Ev: eventlog.BackfillThrough, Detail: id})
			h.progress("backfill %s through: %d runs", id, st.Done)
			return
		}
	}
}
