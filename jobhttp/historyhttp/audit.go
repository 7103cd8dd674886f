package historyhttp

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/shardjob/shardjob/history"
	"github.com/shardjob/shardjob/jobhttp"
)

// AuditStore is what the audit trail is kept in: a *history.Recorder.
type AuditStore interface {
	Audit(ctx context.Context, e history.AuditEntry) (int64, error)
	EndAudit(ctx context.Context, id int64, job string, result history.AuditResult, errText string) error
	QueryAudit(ctx context.Context, f history.AuditFilter) (history.AuditPage, error)
}

// Audit returns s as the handler's audit trail (jobhttp.Options.Audit, and
// the dispatcher's REST API's: dispatch.HandlerConfig.Audit): every
// operation through the handler and its console is written to the
// history database's audit table, via "http", and every call through the
// dispatcher's API via "dispatch". A nil s returns nil: the handler then
// audits nothing.
//
// GET /audit's query parameters are who, job, server, op, via, since and until
// (a duration before now such as "1h", or an RFC 3339 time), limit and
// before, as GET /history's; a bad one is answered 400, naming it.
func Audit(s AuditStore) jobhttp.AuditTrail {
	if s == nil {
		return nil
	}
	return auditTrail{s: s}
}

type auditTrail struct{ s AuditStore }

// Begin writes the entry: started, or refused.
func (a auditTrail) Begin(ctx context.Context, e jobhttp.AuditRecord) (int64, error) {
	res := history.AuditStarted
	if e.Refused {
		res = history.AuditRefused
	}
	via := e.Via
	if via == "" {
		via = "http"
	}
	return a.s.Audit(ctx, history.AuditEntry{Who: e.Who, Role: e.Role, Op: e.Op, Job: e.Job, Server: e.Server,
		Items: e.Items, Via: via, Remote: e.Remote, Result: res, Error: e.Error})
}

// End records the operation's result.
func (a auditTrail) End(ctx context.Context, id int64, job string, ok bool, errText string) error {
	res := history.AuditOK
	if !ok {
		res = history.AuditFailed
	}
	return a.s.EndAudit(ctx, id, job, res, errText)
}

// Read answers GET /audit: a history.AuditPage.
func (a auditTrail) Read(ctx context.Context, q url.Values) (any, error) {
	f, err := parseAuditFilter(q, time.Now())
	if err != nil {
		return nil, classify(err)
	}
	p, err := a.s.QueryAudit(ctx, f)
	if err != nil {
		return nil, classify(err)
	}
	return p, nil
}

// parseAuditFilter reads GET /audit's query parameters.
func parseAuditFilter(q url.Values, now time.Time) (history.AuditFilter, error) {
	f := history.AuditFilter{Who: q.Get("who"), Job: q.Get("job"), Server: q.Get("server"), Op: q.Get("op"), Via: q.Get("via"), Before: q.Get("before")}
	// The shared parameters are read as GET /history reads them.
	hf, err := parseFilter(url.Values{"since": {q.Get("since")}, "until": {q.Get("until")}, "limit": {q.Get("limit")}, "before": {f.Before}}, now)
	if err != nil {
		return f, err
	}
	f.Since, f.Until, f.Limit = hf.Since, hf.Until, hf.Limit
	if v := f.Before; v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n <= 0 {
			return f, fmt.Errorf("%w: before=%q: give the \"next\" cursor of a previous page", history.ErrInvalidFilter, v)
		}
	}
	return f, nil
}
