package jobhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/shardjob/shardjob/internal/admin"
)

// AuditTrail is where the handler writes who did what: one entry per
// operation (every POST), refused ones included. jobhttp/historyhttp
// adapts a *history.Recorder to it, which keeps the trail in the history
// database:
//
//	jobhttp.Options{Audit: historyhttp.Audit(rec)}
//
// An operation is audited in two steps: Begin before it is performed, End
// once it has ended. When Begin fails the operation is refused (503) and
// not performed: the handler fails closed, so that nothing is done through
// it that the trail does not show. When End fails the operation has been
// performed; its entry stays "started" and the failure is logged.
type AuditTrail interface {
	// Begin writes an entry and returns its id. With Refused set the
	// entry is final (the request was refused, Error says why); else the
	// operation is about to be performed.
	Begin(ctx context.Context, e AuditRecord) (id int64, err error)
	// End records how the operation of entry id ended: ok, or failed
	// with errText. job names the operation's job when Begin did not know
	// it (a job created from a document).
	End(ctx context.Context, id int64, job string, ok bool, errText string) error
	// Read answers GET /audit: q is the request's query (who, job,
	// server, op, since, until, limit, before), the result the response's
	// JSON body.
	Read(ctx context.Context, q url.Values) (any, error)
}

// AuditRecord is one entry the handler writes to its AuditTrail.
type AuditRecord struct {
	// Who is the token's name; empty for a request without a known token.
	Who string
	// Role is the token's role (viewer, operator, admin); empty when
	// unknown.
	Role string
	// Op is the operation: trigger, disable, enable, pause, resume,
	// shutdown, drain, undrain, rebalance, disable-items, enable-items,
	// config, schedule, create, remove.
	Op string
	// Job, Server and Items are the operation's target, where they apply
	// (Items as the request gave them: "3,5").
	Job, Server, Items string
	// Remote is the client's address (the request's RemoteAddr: behind a
	// proxy, the proxy's).
	Remote string
	// Refused says the request was refused before anything was done;
	// Error says why.
	Refused bool
	Error   string
}

// auditNote is what the operation's handler adds to its audit entry: the
// job, when only the body names it.
type auditNote struct {
	who principal
	job string
}

type auditNoteKey struct{}

// note returns the request's audit note (nil outside an operation).
func note(r *http.Request) *auditNote {
	n, _ := r.Context().Value(auditNoteKey{}).(*auditNote)
	return n
}

// statusWriter remembers a response's status code and the start of an
// error response's body, for the audit entry's result.
type statusWriter struct {
	http.ResponseWriter
	code int
	body bytes.Buffer
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	if w.code >= 400 && w.body.Len() < 4096 {
		w.body.Write(b[:min(len(b), 4096-w.body.Len())])
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// outcome is the response's result: ok, or the error it carried.
func (w *statusWriter) outcome() (bool, string) {
	if w.code == 0 || w.code < 400 {
		return true, ""
	}
	var e httpError
	if err := json.Unmarshal(w.body.Bytes(), &e); err == nil && e.Error != "" {
		return false, fmt.Sprintf("HTTP %d: %s", w.code, e.Error)
	}
	return false, fmt.Sprintf("HTTP %d: %s", w.code, strings.TrimSpace(w.body.String()))
}

// target is an operation's target as the request names it.
func target(r *http.Request) (job, server, items string) {
	job = r.PathValue("job")
	if job == "" {
		job = r.URL.Query().Get("job")
	}
	server = r.PathValue("server")
	if server == "" {
		server = r.URL.Query().Get("server")
	}
	return job, server, r.URL.Query().Get("items")
}

// auditRefusal writes a refused operation to the trail, if there is one.
// A failure to write it is logged: the request is refused either way.
func (h *handler) auditRefusal(r *http.Request, op string, p principal, why string) {
	if h.audit == nil {
		return
	}
	job, server, items := target(r)
	_, err := h.audit.Begin(context.WithoutCancel(r.Context()), AuditRecord{Who: p.name, Role: p.role.String(), Op: op,
		Job: job, Server: server, Items: items, Remote: r.RemoteAddr, Refused: true, Error: why})
	if err != nil {
		h.log.Error("shardjob admin: a refused operation could not be written to the audit trail",
			"op", op, "who", p.name, "remote", r.RemoteAddr, "err", err)
	}
}

// op wraps a POST endpoint: the caller's token must have role need; the
// operation (named op in the audit trail) is written to the audit trail
// before it is performed — and refused with 503 when that fails — and its
// result once it has ended.
func (h *handler) op(need Role, op string, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if h.keys.empty() {
			if h.refusals.refused(refusedReadOnly, "path", r.URL.Path, "remote", r.RemoteAddr) {
				h.auditRefusal(r, op, principal{}, "read-only: no token is configured")
			}
			h.reply(w, http.StatusForbidden, httpError{Error: "read-only: operations are disabled because no token is configured"})
			return
		}
		p, ok, logged := h.authenticate(w, r, "operation")
		if !ok {
			// Anonymous refusals are audited as they are logged: at most
			// one per refusalInterval, the others counted in the log, so
			// that a client without a token cannot flood the trail.
			if logged {
				h.auditRefusal(r, op, p, "unauthorized: missing or wrong token (further anonymous refusals within 10s are counted in the log only)")
			}
			return
		}
		if p.role < need {
			msg := fmt.Sprintf("forbidden: %s needs the %s role; token %q has %s", op, need, p.name, p.role)
			h.refusals.refused(refusedRole, "op", op, "who", p.name, "role", p.role.String(), "remote", r.RemoteAddr)
			h.auditRefusal(r, op, p, msg)
			h.reply(w, http.StatusForbidden, httpError{Error: msg})
			return
		}
		n := &auditNote{who: p}
		r = r.WithContext(context.WithValue(r.Context(), auditNoteKey{}, n))
		if h.audit == nil {
			next(w, r)
			return
		}
		job, server, items := target(r)
		id, err := h.audit.Begin(r.Context(), AuditRecord{Who: p.name, Role: p.role.String(), Op: op,
			Job: job, Server: server, Items: items, Remote: r.RemoteAddr})
		if err != nil {
			h.log.Error("shardjob admin: operation refused: the audit trail cannot be written",
				"op", op, "who", p.name, "remote", r.RemoteAddr, "err", err)
			h.reply(w, http.StatusServiceUnavailable, httpError{Error: "refused: the audit trail cannot be written, so the operation was not performed: " + admin.OneLine(err)})
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		next(sw, r)
		ok, errText := sw.outcome()
		if err := h.audit.End(context.WithoutCancel(r.Context()), id, n.job, ok, errText); err != nil {
			h.log.Error("shardjob admin: the operation was performed but its end could not be written to the audit trail (its entry stays started)",
				"op", op, "who", p.name, "entry", id, "err", err)
		}
	}
}

// auditRead is GET /audit: the audit trail, for admins.
func (h *handler) auditRead(w http.ResponseWriter, r *http.Request) {
	p, ok, _ := h.authenticate(w, r, "read")
	if !ok {
		return
	}
	if p.role < RoleAdmin {
		h.reply(w, http.StatusForbidden, httpError{Error: fmt.Sprintf("forbidden: reading the audit trail needs the admin role; token %q has %s", p.name, p.role)})
		return
	}
	if h.audit == nil {
		h.reply(w, http.StatusNotFound, httpError{Error: "the audit trail is not configured: the handler was made without Options.Audit"})
		return
	}
	ctx, cancel := h.ctx(r)
	defer cancel()
	page, err := h.audit.Read(ctx, r.URL.Query())
	if err != nil {
		(&historyHandler{h: h}).fail(w, r, err)
		return
	}
	h.reply(w, http.StatusOK, page)
}

// whoami is GET /whoami: the role of the request's token, so that the
// console shows only what it may do. A request without a token is
// anonymous (role ""); one with an unknown token is refused with 401.
func (h *handler) whoami(w http.ResponseWriter, r *http.Request) {
	p, sent, ok := h.keys.identify(r)
	if sent && !ok {
		h.authenticate(w, r, "read") // replies 401
		return
	}
	h.reply(w, http.StatusOK, map[string]any{
		"name": p.name, "role": p.role.String(), "readOnly": h.keys.empty(), "audited": h.audit != nil,
	})
}
