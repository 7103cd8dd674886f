package jobhttp

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/shardjob/shardjob/internal/admin"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobfile"
)

// create is POST /jobs: a script or http job defined by its YAML job
// document (the body), stored for the instances that follow definitions.
func (h *handler) create(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxConfigBody))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		h.fail(w, r, fmt.Errorf("%w: %w: the job document is larger than %d bytes", admin.ErrInvalid, job.ErrConfigTooLarge, tooLarge.Limit))
		return
	}
	if err != nil {
		h.fail(w, r, fmt.Errorf("%w: reading the job document: %w", admin.ErrInvalid, err))
		return
	}
	ctx, cancel := h.ctx(r)
	defer cancel()
	sp, err := jobfile.Define(ctx, h.rc, data)
	switch {
	case errors.Is(err, jobfile.ErrJobExists):
		h.fail(w, r, fmt.Errorf("%w: %w", admin.ErrConflict, err))
		return
	case errors.Is(err, job.ErrInvalidConfig), errors.Is(err, jobfile.ErrInvalidJob), errors.Is(err, jobfile.ErrNotDefinable):
		h.fail(w, r, fmt.Errorf("%w: %w", admin.ErrInvalid, err))
		return
	case err != nil:
		h.fail(w, r, err)
		return
	}
	h.done(r, "create", "job", sp.Name, "type", string(sp.Type), "cron", sp.Cron, "items", sp.ShardingTotalCount)
	h.reply(w, http.StatusCreated, map[string]any{"job": sp.Name, "type": sp.Type, "created": true,
		"cron": sp.Cron, "shardingTotalCount": sp.ShardingTotalCount})
}
