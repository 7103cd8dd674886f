package jobhttp

import (
	"fmt"
	"net/http"
	"time"

	"github.com/shardjob/shardjob/internal/admin"
	"github.com/shardjob/shardjob/internal/backfill"
)

// maxBackfillBody bounds a backfill request's body.
const maxBackfillBody = 4 << 10

// backfillRequest is POST /jobs/{job}/backfill's body.
type backfillRequest struct {
	From string  `json:"from"`
	To   string  `json:"to"`
	Rate float64 `json:"rate"`
}

// backfillStart is POST /jobs/{job}/backfill: start a backfill of the
// job's fires from "from" to "to" (RFC 3339 times or dates) at "rate"
// fires a second on each instance (0: the default).
func (h *handler) backfillStart(w http.ResponseWriter, r *http.Request) {
	var req backfillRequest
	if !h.decodeBody(w, r, maxBackfillBody, &req, "a backfill", `{"from": "2026-11-01", "to": "2026-11-30T23:59:59Z", "rate": 10}`) {
		return
	}
	var b admin.Backfill
	for _, f := range []struct {
		name, text string
		to         *time.Time
	}{{"from", req.From, &b.From}, {"to", req.To, &b.To}} {
		t, err := backfill.ParseTime(f.text)
		if err != nil {
			h.fail(w, r, fmt.Errorf("%w: %s: %w", admin.ErrInvalid, f.name, err))
			return
		}
		*f.to = t
	}
	b.Rate = req.Rate
	if n := note(r); n != nil {
		b.By = n.Who.Name
	}
	ctx, cancel := h.ctx(r)
	defer cancel()
	jobName := r.PathValue("job")
	started, err := h.adm.StartBackfill(ctx, jobName, b)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.done(r, "backfill", "job", jobName, "backfill", started.ID, "from", started.FromTime(), "to", started.ToTime())
	h.reply(w, http.StatusOK, started)
}

// backfillState is POST /jobs/{job}/backfill/cancel and .../resume.
func (h *handler) backfillState(resume bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := h.ctx(r)
		defer cancel()
		jobName := r.PathValue("job")
		op, name := h.adm.CancelBackfill, "backfill cancel"
		if resume {
			op, name = h.adm.ResumeBackfill, "backfill resume"
		}
		req, err := op(ctx, jobName)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		h.done(r, name, "job", jobName, "backfill", req.ID)
		h.reply(w, http.StatusOK, req)
	}
}

// backfillStatus is GET /jobs/{job}/backfill: the backfill and its
// progress.
func (h *handler) backfillStatus(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	st, err := h.adm.BackfillStatus(ctx, r.PathValue("job"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.reply(w, http.StatusOK, st)
}
