package jobhttp

import (
	"context"
	"fmt"
	"net/http"

	"github.com/shardjob/shardjob/internal/admin"
	"github.com/shardjob/shardjob/internal/authz"
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
// performed; its entry stays "started" and the failure is logged. The
// dispatcher's REST API (dispatch.HandlerConfig.Audit) takes the same
// trail.
type AuditTrail = authz.AuditTrail

// AuditRecord is one entry the handler writes to its AuditTrail.
type AuditRecord = authz.AuditRecord

// auditNote is what the operation's handler adds to its audit entry: the
// job, when only the body names it.
type auditNote struct {
	who authz.Principal
	job string
}

type auditNoteKey struct{}

// note returns the request's audit note (nil outside an operation).
func note(r *http.Request) *auditNote {
	n, _ := r.Context().Value(auditNoteKey{}).(*auditNote)
	return n
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
func (h *handler) auditRefusal(r *http.Request, op string, p authz.Principal, why string) {
	if h.audit == nil {
		return
	}
	job, server, items := target(r)
	_, err := h.audit.Begin(context.WithoutCancel(r.Context()), AuditRecord{Who: p.Name, Role: p.Role.String(), Op: op,
		Job: job, Server: server, Items: items, Remote: r.RemoteAddr, Refused: true, Error: why})
	if err != nil {
		h.log.Error("shardjob admin: a refused operation could not be written to the audit trail",
			"op", op, "who", p.Name, "remote", r.RemoteAddr, "err", err)
	}
}

// op wraps a POST endpoint: the caller's token must have role need; the
// operation (named op in the audit trail) is written to the audit trail
// before it is performed — and refused with 503 when that fails — and its
// result once it has ended.
func (h *handler) op(need Role, op string, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if h.keys.Empty() {
			if h.refusals.Refused(refusedReadOnly, "path", r.URL.Path, "remote", r.RemoteAddr) {
				h.auditRefusal(r, op, authz.Principal{}, "read-only: no token is configured")
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
		if p.Role < need {
			msg := fmt.Sprintf("forbidden: %s needs the %s role; token %q has %s", op, need, p.Name, p.Role)
			h.refusals.Refused(refusedRole, "op", op, "who", p.Name, "role", p.Role.String(), "remote", r.RemoteAddr)
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
		id, err := h.audit.Begin(r.Context(), AuditRecord{Who: p.Name, Role: p.Role.String(), Op: op,
			Job: job, Server: server, Items: items, Remote: r.RemoteAddr})
		if err != nil {
			h.log.Error("shardjob admin: operation refused: the audit trail cannot be written",
				"op", op, "who", p.Name, "remote", r.RemoteAddr, "err", err)
			h.reply(w, http.StatusServiceUnavailable, httpError{Error: "refused: the audit trail cannot be written, so the operation was not performed: " + admin.OneLine(err)})
			return
		}
		sw := &authz.StatusWriter{ResponseWriter: w}
		next(sw, r)
		ok, errText := sw.Outcome()
		if err := h.audit.End(context.WithoutCancel(r.Context()), id, n.job, ok, errText); err != nil {
			h.log.Error("shardjob admin: the operation was performed but its end could not be written to the audit trail (its entry stays started)",
				"op", op, "who", p.Name, "entry", id, "err", err)
		}
	}
}

// auditRead is GET /audit: the audit trail, for admins.
func (h *handler) auditRead(w http.ResponseWriter, r *http.Request) {
	p, ok, _ := h.authenticate(w, r, "read")
	if !ok {
		return
	}
	if p.Role < RoleAdmin {
		h.reply(w, http.StatusForbidden, httpError{Error: fmt.Sprintf("forbidden: reading the audit trail needs the admin role; token %q has %s", p.Name, p.Role)})
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
	p, sent, ok := h.keys.Identify(r)
	if sent && !ok {
		h.authenticate(w, r, "read") // replies 401
		return
	}
	h.reply(w, http.StatusOK, map[string]any{
		"name": p.Name, "role": p.Role.String(), "readOnly": h.keys.Empty(), "audited": h.audit != nil,
	})
}
