package jobhttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/shardjob/shardjob/history"
	"github.com/shardjob/shardjob/internal/admin"
)

// HistoryReader is what GET /history and GET /history/status read: a
// *history.Recorder (the instance's own) or a *history.Reader.
type HistoryReader interface {
	Query(ctx context.Context, f history.Filter) (history.Page, error)
	QueryEvents(ctx context.Context, f history.Filter) (history.EventPage, error)
}

// routeHistory serves the execution history and the job status events.
func routeHistory(mux *http.ServeMux, h *handler, src HistoryReader) {
	hh := &historyHandler{h: h, src: src}
	mux.HandleFunc("GET /history", hh.executions)
	mux.HandleFunc("GET /history/status", hh.events)
}

type historyHandler struct {
	h   *handler
	src HistoryReader
}

// GET /history?job=&server=&kind=&failed=1&since=&until=&limit=&before=
//
// An execution whose run recorded an output (job.RecordOutput) carries it
// as "output", the JSON value itself, and "outputTruncated": true when the
// stored value was too long and is shown cut (see history.Execution).
func (hh *historyHandler) executions(w http.ResponseWriter, r *http.Request) {
	f, ok := hh.filter(w, r)
	if !ok {
		return
	}
	ctx, cancel := hh.h.ctx(r)
	defer cancel()
	p, err := hh.src.Query(ctx, f)
	if err != nil {
		hh.fail(w, r, err)
		return
	}
	hh.h.reply(w, http.StatusOK, p)
}

// GET /history/status with the same parameters.
func (hh *historyHandler) events(w http.ResponseWriter, r *http.Request) {
	f, ok := hh.filter(w, r)
	if !ok {
		return
	}
	ctx, cancel := hh.h.ctx(r)
	defer cancel()
	p, err := hh.src.QueryEvents(ctx, f)
	if err != nil {
		hh.fail(w, r, err)
		return
	}
	hh.h.reply(w, http.StatusOK, p)
}

// filter reads the query parameters; on a bad one it answers 400 naming
// it and returns false.
func (hh *historyHandler) filter(w http.ResponseWriter, r *http.Request) (history.Filter, bool) {
	if hh.src == nil {
		hh.h.reply(w, http.StatusNotFound, httpError{Error: "history is not configured: the handler was made without Options.History"})
		return history.Filter{}, false
	}
	f, err := parseHistoryFilter(r.URL.Query(), time.Now())
	if err != nil {
		hh.h.reply(w, http.StatusBadRequest, httpError{Error: err.Error()})
		return history.Filter{}, false
	}
	return f, true
}

// parseHistoryFilter reads the query parameters of GET /history and GET
// /history/status: job, server, kind, failed (1, true, 0 or false), since
// and until (a duration before now such as "1h", or an RFC 3339 time),
// limit (1 to history.MaxLimit, default history.DefaultLimit) and before
// (a page's next cursor). The error names the parameter and wraps
// history.ErrInvalidFilter.
func parseHistoryFilter(q url.Values, now time.Time) (history.Filter, error) {
	f := history.Filter{Job: q.Get("job"), Server: q.Get("server"), Kind: q.Get("kind"), Before: q.Get("before")}
	bad := func(name, v, want string) error {
		return fmt.Errorf("%w: %s=%q: %s", history.ErrInvalidFilter, name, v, want)
	}
	switch v := q.Get("failed"); v {
	case "", "0", "false":
	case "1", "true":
		f.Failed = true
	default:
		return f, bad("failed", v, "give 1 or true (or 0, false)")
	}
	for _, p := range []struct {
		name string
		t    *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		v := q.Get(p.name)
		if v == "" {
			continue
		}
		t, err := history.ParseTime(v, now)
		if err != nil {
			return f, bad(p.name, v, "give a duration before now such as 1h or 30m, or an RFC 3339 time such as 2026-05-04T10:00:00Z")
		}
		*p.t = t
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > history.MaxLimit {
			return f, bad("limit", v, fmt.Sprintf("give a number from 1 to %d (default %d)", history.MaxLimit, history.DefaultLimit))
		}
		f.Limit = n
	}
	if v := f.Before; v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n <= 0 {
			return f, bad("before", v, `give the "next" cursor of a previous page`)
		}
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return f, bad("since", q.Get("since"), "must be before until="+q.Get("until"))
	}
	return f, nil
}

// fail answers a history read's error: 400 for a bad filter, 500 for a
// row that cannot be read, 504 on a timeout, 503 when the database
// cannot be reached.
func (hh *historyHandler) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusServiceUnavailable
	switch {
	case errors.Is(err, history.ErrInvalidFilter):
		code = http.StatusBadRequest
	case errors.Is(err, history.ErrBadRow):
		code = http.StatusInternalServerError
	case errors.Is(err, context.DeadlineExceeded):
		code = http.StatusGatewayTimeout
	}
	msg := admin.OneLine(err)
	if code >= 500 {
		hh.h.log.Warn("shardjob history request failed", "path", r.URL.Path, "status", code, "err", msg)
	}
	hh.h.reply(w, code, httpError{Error: msg})
}
