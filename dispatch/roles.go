package dispatch

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/shardjob/shardjob/internal/authz"
)

// The REST API's tokens, roles and audit trail are those of package
// jobhttp's handler and console: a tokens file or document configures
// both, and both write to the same audit trail (the history database,
// through jobhttp/historyhttp.Audit).

// ErrInvalidTokens is a token configuration that cannot be used: an
// unknown role, an empty or duplicate name, an empty or duplicate token, a
// tokens file that cannot be read. The message names the problem and the
// token's name, never the token. NewHandler's errors wrap it and
// ErrInvalid. It is jobhttp.ErrInvalidTokens.
var ErrInvalidTokens = authz.ErrInvalidTokens

// Role is what a token may do; each role may do what the one below it
// may. It is jobhttp.Role.
type Role = authz.Role

// The roles, as the REST API grants them.
const (
	// RoleViewer reads: the global cap, the workers, the tasks.
	RoleViewer = authz.RoleViewer
	// RoleOperator is a viewer that also works the queues: assigns tasks,
	// finishes and cancels them.
	RoleOperator = authz.RoleOperator
	// RoleAdmin is an operator that also changes the dispatcher's
	// configuration: the global cap and the workers (tenants: their caps,
	// late policies and webhooks); and reads the audit trail.
	RoleAdmin = authz.RoleAdmin
)

// Token is one bearer token: who holds it (Name, written to the audit
// trail), what it may do (Role) and the token itself (Secret, never logged
// nor written to the audit trail). It is jobhttp.Token.
type Token = authz.Token

// AuditTrail is where the REST API writes who did what: one entry per call
// that changes something (PUT and POST), refused ones included. It is
// jobhttp.AuditTrail; jobhttp/historyhttp.Audit adapts a
// *history.Recorder or *history.Auditor to it, which keeps the trail in
// the history database:
//
//	dispatch.HandlerConfig{Tokens: toks, Audit: historyhttp.Audit(aud)}
//
// A call is audited in two steps: Begin before it is performed, End once
// it has ended. When Begin fails the call is refused (503) and not
// performed. When End fails the call has been performed; its entry stays
// "started" and the failure is logged.
type AuditTrail = authz.AuditTrail

// AuditRecord is one entry the REST API writes to its AuditTrail, with
// Via "dispatch": Job is the worker and Items the task's UUID, where they
// apply. It is jobhttp.AuditRecord.
type AuditRecord = authz.AuditRecord

// auditVia names the REST API in the audit trail.
const auditVia = "dispatch"

// refusedRead is the refusal log's kind for a read without a known
// token (the calls' kinds are the gate's).
const refusedRead = "read refused: missing or wrong token"

// handlerTokens gathers and checks cfg's tokens: at least one, the single
// Token (when set) at least 16 bytes.
func handlerTokens(cfg HandlerConfig) ([]Token, error) {
	if cfg.Token != "" && len(cfg.Token) < 16 {
		return nil, fmt.Errorf("%w: the REST token must be at least 16 bytes", ErrInvalid)
	}
	toks, err := authz.Collect(cfg.Token, cfg.Tokens, cfg.TokensFile)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if len(toks) == 0 {
		return nil, fmt.Errorf("%w: %w: the REST API needs a token: give Token, Tokens or TokensFile", ErrInvalid, ErrInvalidTokens)
	}
	return toks, nil
}

// noteWorker records the call's worker for its audit entry (nothing
// outside an audited call).
func noteWorker(r *http.Request, worker string) {
	if n := authz.NoteOf(r); n != nil && n.Job == "" {
		n.Job = worker
	}
}

// noteTaskWorker notes the worker of the request's task for the audit
// entry of a call that failed before it read the task. An unknown task
// has no worker to note: a failed read leaves the entry without one.
func (h *api) noteTaskWorker(r *http.Request) {
	if authz.NoteOf(r) == nil {
		return
	}
	if t, err := h.d.Task(r.Context(), r.PathValue("uuid")); err == nil {
		noteWorker(r, t.Worker)
	}
}

// target is an audited call's target as its path names it: the worker
// (in the entry's job) and the task (in its items).
func target(r *http.Request) (worker, server, task string) {
	return r.PathValue("name"), "", r.PathValue("uuid")
}

// unauthorized answers 401.
func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="shardjob dispatch"`)
	writeJSON(w, http.StatusUnauthorized, errorBody{"missing or wrong token: send Authorization: Bearer TOKEN"})
}

// newGate returns the gate of the API's calls that change something
// (h.keys and h.refusals set).
func (h *api) newGate() *authz.Gate {
	return &authz.Gate{Keys: h.keys, Audit: h.cfg.Audit, Refusals: h.refusals, Log: h.cfg.Logger, LogPrefix: "dispatch: ",
		Via: auditVia, Noun: "call", Target: target, Unauthorized: unauthorized,
		Reply: func(w http.ResponseWriter, code int, msg string) { writeJSON(w, code, errorBody{msg}) },
	}
}

// read wraps a GET endpoint: any role may read.
func (h *api) read(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, _, ok := h.keys.Identify(r); !ok {
			h.refusals.Refused(refusedRead, "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
			unauthorized(w)
			return
		}
		next(w, r)
	}
}

// whoami is GET /v1/whoami: the name and role of the caller's token, and
// whether calls are audited.
func (h *api) whoami(w http.ResponseWriter, r *http.Request) {
	p, _, _ := h.keys.Identify(r)
	writeJSON(w, http.StatusOK, map[string]any{"name": p.Name, "role": p.Role.String(), "audited": h.cfg.Audit != nil})
}

// auditRead is GET /v1/audit: the audit trail, for admins.
func (h *api) auditRead(w http.ResponseWriter, r *http.Request) {
	p, _, _ := h.keys.Identify(r)
	if p.Role < RoleAdmin {
		writeJSON(w, http.StatusForbidden, errorBody{fmt.Sprintf("forbidden: reading the audit trail needs the admin role; token %q has %s", p.Name, p.Role)})
		return
	}
	if h.cfg.Audit == nil {
		writeJSON(w, http.StatusNotFound, errorBody{"the audit trail is not configured: the handler was made without HandlerConfig.Audit"})
		return
	}
	page, err := h.cfg.Audit.Read(r.Context(), r.URL.Query())
	var coded interface{ HTTPStatus() int }
	switch {
	case errors.As(err, &coded):
		if coded.HTTPStatus() >= 500 {
			h.cfg.Logger.Error("dispatch: reading the audit trail failed", "err", err)
		}
		writeJSON(w, coded.HTTPStatus(), errorBody{oneLine(err.Error())})
		return
	case err != nil:
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// oneLine folds a message to one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
