package jobhttp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/shardjob/shardjob/internal/admin"
)

// maxScheduleBody bounds the body of POST /jobs/{job}/schedule.
const maxScheduleBody = 4 << 10

// scheduleRequest is the body of POST /jobs/{job}/schedule; an absent
// field keeps its stored value.
type scheduleRequest struct {
	Cron               *string `json:"cron"`
	ShardingTotalCount *int    `json:"shardingTotalCount"`
}

// schedule edits the cron and the item count of a job's stored config.
func (h *handler) schedule(w http.ResponseWriter, r *http.Request) {
	var req scheduleRequest
	if !h.decodeBody(w, r, maxScheduleBody, &req, "a schedule edit", `{"cron": "0 */5 * * * *", "shardingTotalCount": 4}`) {
		return
	}
	ctx, cancel := h.ctx(r)
	defer cancel()
	jobName := r.PathValue("job")
	cfg, changed, err := h.adm.SetSchedule(ctx, jobName, admin.Schedule{Cron: req.Cron, ShardingTotalCount: req.ShardingTotalCount})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.done(r, "schedule set", "job", jobName, "changed", changed, "cron", cfg.Cron, "items", cfg.ShardingTotalCount)
	h.reply(w, http.StatusOK, map[string]any{"job": jobName, "changed": changed, "config": cfg})
}

// decodeBody decodes r's body, at most max bytes of one JSON value with no
// unknown field, into v; a body that is not one is answered (413, or 400
// naming what, with example) and false returned.
func (h *handler) decodeBody(w http.ResponseWriter, r *http.Request, max int64, v any, what, example string) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, max))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	}
	var tooLarge *http.MaxBytesError
	switch {
	case err == nil:
		return true
	case errors.As(err, &tooLarge):
		h.reply(w, http.StatusRequestEntityTooLarge, httpError{Error: fmt.Sprintf("the request body is larger than %d bytes", tooLarge.Limit)})
	case errors.Is(err, io.EOF):
		h.fail(w, r, fmt.Errorf("%w: send a JSON body such as %s", admin.ErrInvalid, example))
	default:
		h.fail(w, r, fmt.Errorf("%w: the body is not %s: %s", admin.ErrInvalid, what, strings.TrimPrefix(err.Error(), "json: ")))
	}
	return false
}
