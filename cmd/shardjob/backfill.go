package main

import (
	"fmt"
	"time"

	"github.com/shardjob/shardjob/internal/admin"
	"github.com/shardjob/shardjob/internal/backfill"
)

// backfillOptions are shardjob backfill's flags.
type backfillOptions struct {
	from, to               string
	rate                   float64
	status, cancel, resume bool
}

// cmdBackfill starts, shows, cancels or resumes a job's backfill.
func cmdBackfill(e *env, args []string) error {
	job, o := args[0], e.o.bf
	modes := 0
	for _, on := range []bool{o.from != "" || o.to != "", o.status, o.cancel, o.resume} {
		if on {
			modes++
		}
	}
	if modes != 1 {
		return fmt.Errorf("%w: give --from and --to to start a backfill, or one of --status, --cancel, --resume", admin.ErrInvalid)
	}
	switch {
	case o.status:
		st, err := e.adm.BackfillStatus(e.ctx, job)
		if err != nil {
			return err
		}
		if e.json {
			return e.emit(st)
		}
		e.printf("backfill %s of %s (%s to %s, %v fires a second): %s; %d of %d runs done (%d fires × %d items), %d items through\n",
			st.Request.ID, job, fmtTime(st.Request.FromTime()), fmtTime(st.Request.ToTime()), st.Request.Rate, st.State,
			st.Done, st.Fires*st.Items, st.Fires, st.Items, st.Through)
		return nil
	case o.cancel, o.resume:
		op, verb := e.adm.CancelBackfill, "cancelled"
		if o.resume {
			op, verb = e.adm.ResumeBackfill, "resumed"
		}
		req, err := op(e.ctx, job)
		if err != nil {
			return err
		}
		if e.json {
			return e.emit(req)
		}
		e.printf("backfill %s of %s %s\n", req.ID, job, verb)
		return nil
	}
	if o.from == "" || o.to == "" {
		return fmt.Errorf("%w: a backfill needs both --from and --to", admin.ErrInvalid)
	}
	from, err := parseBackfillTime("--from", o.from)
	if err != nil {
		return err
	}
	to, err := parseBackfillTime("--to", o.to)
	if err != nil {
		return err
	}
	req, err := e.adm.StartBackfill(e.ctx, job, admin.Backfill{From: from, To: to, Rate: o.rate, By: auditWho(e.o)})
	if err != nil {
		return err
	}
	if e.json {
		return e.emit(req)
	}
	e.printf("backfill %s of %s started: its fires from %s to %s run again on each item's owner, at most %v a second on each instance; shardjob backfill %s --status shows progress\n",
		req.ID, job, fmtTime(req.FromTime()), fmtTime(req.ToTime()), req.Rate, job)
	return nil
}

// parseBackfillTime reads flag's time (backfill.ParseTime).
func parseBackfillTime(flag, s string) (time.Time, error) {
	t, err := backfill.ParseTime(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %s %q is not a time: give RFC 3339 (2026-11-30T14:00:00Z) or a date (2026-11-30)", admin.ErrInvalid, flag, s)
	}
	return t, nil
}

func fmtTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }
