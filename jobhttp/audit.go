package jobhttp

import (
	"fmt"
	"net/http"

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

// note returns the request's audit note (nil outside an operation).
func note(r *http.Request) *authz.Note { return authz.NoteOf(r) }

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

// newGate returns the gate of the handler's operations (h.keys, h.audit,
// h.refusals and h.log set).
func (h *handler) newGate() *authz.Gate {
	return &authz.Gate{Keys: h.keys, Audit: h.audit, Refusals: h.refusals, Log: h.log, LogPrefix: "shardjob admin: ",
		Via: "http", Noun: "operation", Target: target,
		Unauthorized: func(w http.ResponseWriter) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="shardjob"`)
			h.reply(w, http.StatusUnauthorized, httpError{Error: "unauthorized: send Authorization: Bearer <token>"})
		},
		Reply: func(w http.ResponseWriter, code int, msg string) { h.reply(w, code, httpError{Error: msg}) },
	}
}

// op wraps a POST endpoint: the caller's token must have role need; the
// operation (named op in the audit trail) is written to the audit trail
// before it is performed — and refused with 503 when that fails — and its
// result once it has ended (authz.Gate). Without any token the handler is
// read-only: every operation is refused.
func (h *handler) op(need Role, op string, next http.HandlerFunc) http.HandlerFunc {
	guarded := h.gate.Op(need, op, next)
	return func(w http.ResponseWriter, r *http.Request) {
		if h.keys.Empty() {
			if h.refusals.Refused(refusedReadOnly, "path", r.URL.Path, "remote", r.RemoteAddr) {
				h.gate.AuditRefusal(r, op, authz.Principal{}, "read-only: no token is configured")
			}
			h.reply(w, http.StatusForbidden, httpError{Error: "read-only: operations are disabled because no token is configured"})
			return
		}
		guarded(w, r)
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
