package jobhttp

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/shardjob/shardjob/internal/admin"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobfile"
)

// create is POST /jobs[?unfollowed=true]: a script or http job defined by
// its YAML job document (the body), stored for the instances that follow
// definitions. The definition gets the checks a follower makes before it
// runs one (jobfile.DefineWith), the namespace's limits on definitions,
// and, unless unfollowed=true, a live instance must follow its type.
func (h *handler) create(w http.ResponseWriter, r *http.Request) {
	unfollowed := false
	if v := r.URL.Query().Get("unfollowed"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			h.fail(w, r, fmt.Errorf("%w: unfollowed=%q: give true or false", admin.ErrInvalid, v))
			return
		}
		unfollowed = b
	}
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
	sp, err := jobfile.DefineWith(ctx, h.rc, data, jobfile.DefineOptions{
		MaxDefinitions: h.maxDefinitions, MaxBytes: h.maxDefinitionBytes, RequireFollower: !unfollowed})
	switch {
	case errors.Is(err, jobfile.ErrDefinitionTooLarge):
		h.reply(w, http.StatusRequestEntityTooLarge, httpError{Error: admin.OneLine(err)})
		return
	case errors.Is(err, jobfile.ErrTooManyDefinitions):
		h.fail(w, r, fmt.Errorf("%w: %w", admin.ErrConflict, err))
		return
	case errors.Is(err, jobfile.ErrNotFollowed):
		h.reply(w, http.StatusUnprocessableEntity, httpError{Error: admin.OneLine(err) + "; to store it all the same, POST /jobs?unfollowed=true"})
		return
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
	if n := note(r); n != nil {
		n.Job = sp.Name
	}
	out := map[string]any{"job": sp.Name, "type": sp.TypeOrDefault(), "created": true,
		"cron": sp.Cron, "shardingTotalCount": sp.ShardingTotalCount}
	followers, err := jobfile.Followers(ctx, h.rc, sp.TypeOrDefault())
	switch {
	case err != nil:
		out["warning"] = "stored, but which instances follow " + string(sp.TypeOrDefault()) + " jobs could not be read: " + admin.OneLine(err)
	case len(followers) == 0:
		out["warning"] = "no instance follows " + string(sp.TypeOrDefault()) + " jobs: nothing runs this job until one does"
	}
	if followers == nil {
		followers = []string{}
	}
	out["followers"] = followers
	h.done(r, "create", "job", sp.Name, "type", string(sp.Type), "cron", sp.Cron, "items", sp.ShardingTotalCount, "followers", len(followers))
	h.reply(w, http.StatusCreated, out)
}
