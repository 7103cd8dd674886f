// Package historyhttp serves the execution history through package
// jobhttp: GET /history, GET /history/status and the console's history
// page. It lives apart from jobhttp so that a handler which serves no
// history does not link the history (whose database client, in turn, the
// program links by importing store/sqlite or store/postgres).
//
//	import _ "github.com/shardjob/shardjob/store/sqlite"
//
//	rec, _ := history.Open(ctx, history.Config{DSN: "/var/lib/shop/history.db"})
//	h := jobhttp.NewHandler(rc, jobhttp.Options{History: historyhttp.New(rec)})
package historyhttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/shardjob/shardjob/history"
	"github.com/shardjob/shardjob/jobhttp"
)

// Reader is what the pages read: a *history.Recorder (the instance's own)
// or a *history.Reader.
type Reader interface {
	Query(ctx context.Context, f history.Filter) (history.Page, error)
	QueryEvents(ctx context.Context, f history.Filter) (history.EventPage, error)
}

// New returns r as the handler's history (jobhttp.Options.History). A nil
// r returns nil: the handler then answers 404, history not configured.
//
// The query parameters are job, server, kind, failed (1, true, 0 or
// false), since and until (a duration before now such as "1h", or an RFC
// 3339 time), limit (1 to history.MaxLimit, default history.DefaultLimit)
// and before (a page's "next" cursor). A bad one is answered 400, naming
// it; a row that cannot be read 500; a database that cannot be reached
// 503.
func New(r Reader) jobhttp.History {
	if r == nil {
		return nil
	}
	return source{r: r}
}

type source struct{ r Reader }

// Executions answers GET /history: a history.Page.
func (s source) Executions(ctx context.Context, q url.Values) (any, error) {
	f, err := parseFilter(q, time.Now())
	if err != nil {
		return nil, classify(err)
	}
	p, err := s.r.Query(ctx, f)
	if err != nil {
		return nil, classify(err)
	}
	return p, nil
}

// Events answers GET /history/status: a history.EventPage.
func (s source) Events(ctx context.Context, q url.Values) (any, error) {
	f, err := parseFilter(q, time.Now())
	if err != nil {
		return nil, classify(err)
	}
	p, err := s.r.QueryEvents(ctx, f)
	if err != nil {
		return nil, classify(err)
	}
	return p, nil
}

// classify gives a bad filter 400 and a row that cannot be read 500; the
// handler answers the rest (504 on a timeout, else 503).
func classify(err error) error {
	switch {
	case errors.Is(err, history.ErrInvalidFilter):
		return &jobhttp.StatusError{Code: http.StatusBadRequest, Err: err}
	case errors.Is(err, history.ErrBadRow):
		return &jobhttp.StatusError{Code: http.StatusInternalServerError, Err: err}
	}
	return err
}

// parseFilter reads the query parameters of GET /history and GET
// /history/status. The error names the parameter and wraps
// history.ErrInvalidFilter.
func parseFilter(q url.Values, now time.Time) (history.Filter, error) {
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
