package authz

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
)

// Gate guards a handler's operations: the endpoints that change
// something. It checks the caller's token and role, writes the operation
// to the audit trail before it is performed — refusing it (503) when that
// fails, so that nothing is done that the trail does not show — and its
// result once it has ended. Refusals are audited too: all those of a
// known token; those without one as the refusal log writes them (at most
// one per RefusalInterval), so that an anonymous client cannot flood the
// trail. A Gate is read-only once made and safe for concurrent use.
type Gate struct {
	// Keys are the tokens.
	Keys *Keyring
	// Audit is the trail; nil audits nothing.
	Audit AuditTrail
	// Refusals rate-limits the log of refused requests.
	Refusals *RefusalLog
	// Log receives the trail's failures, with LogPrefix.
	Log       *slog.Logger
	LogPrefix string
	// Via names the API in the trail (AuditRecord.Via).
	Via string
	// Noun is what the API calls an operation in its messages:
	// "operation", "call".
	Noun string
	// Target returns an operation's target as the request names it.
	Target func(r *http.Request) (job, server, items string)
	// Unauthorized replies 401 to a request without a known token.
	Unauthorized func(w http.ResponseWriter)
	// Reply replies with code and the error message msg.
	Reply func(w http.ResponseWriter, code int, msg string)
}

// Note is what an operation's handler may add to its audit entry, and
// who performs it.
type Note struct {
	// Who is the caller.
	Who Principal
	// Job names the operation's job (through the dispatcher's API, its
	// worker) when the request's path does not: the operation's handler
	// sets it, and the entry's end records it.
	Job string
}

type noteKey struct{}

// NoteOf returns the note of the operation r is (nil outside one).
func NoteOf(r *http.Request) *Note {
	n, _ := r.Context().Value(noteKey{}).(*Note)
	return n
}

// RefusedToken is the refusal log's kind for an operation without a
// known token.
func (g *Gate) RefusedToken() string { return g.Noun + " refused: missing or wrong token" }

// RefusedRole is the refusal log's kind for an operation whose token's
// role is too low.
func (g *Gate) RefusedRole() string { return g.Noun + " refused: the token's role is too low" }

// AuditRefusal writes the refused operation op of r, by p, to the trail,
// if there is one, saying why. A failure to write it is logged: the
// request is refused either way.
func (g *Gate) AuditRefusal(r *http.Request, op string, p Principal, why string) {
	if g.Audit == nil {
		return
	}
	job, server, items := g.Target(r)
	_, err := g.Audit.Begin(context.WithoutCancel(r.Context()), AuditRecord{Via: g.Via, Who: p.Name, Role: p.Role.String(), Op: op,
		Job: job, Server: server, Items: items, Remote: r.RemoteAddr, Refused: true, Error: why})
	if err != nil {
		g.Log.Error(g.LogPrefix+"a refused "+g.Noun+" could not be written to the audit trail",
			"op", op, "who", p.Name, "remote", r.RemoteAddr, "err", err)
	}
}

// Op wraps the endpoint next, the operation op: the caller's token must
// have role need.
func (g *Gate) Op(need Role, op string, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, _, ok := g.Keys.Identify(r)
		if !ok {
			if g.Refusals.Refused(g.RefusedToken(), "path", r.URL.Path, "remote", r.RemoteAddr) {
				g.AuditRefusal(r, op, p, "unauthorized: missing or wrong token (further anonymous refusals within 10s are counted in the log only)")
			}
			g.Unauthorized(w)
			return
		}
		if p.Role < need {
			msg := fmt.Sprintf("forbidden: %s needs the %s role; token %q has %s", op, need, p.Name, p.Role)
			g.Refusals.Refused(g.RefusedRole(), "op", op, "who", p.Name, "role", p.Role.String(), "remote", r.RemoteAddr)
			g.AuditRefusal(r, op, p, msg)
			g.Reply(w, http.StatusForbidden, msg)
			return
		}
		n := &Note{Who: p}
		r = r.WithContext(context.WithValue(r.Context(), noteKey{}, n))
		if g.Audit == nil {
			next(w, r)
			return
		}
		job, server, items := g.Target(r)
		id, err := g.Audit.Begin(r.Context(), AuditRecord{Via: g.Via, Who: p.Name, Role: p.Role.String(), Op: op,
			Job: job, Server: server, Items: items, Remote: r.RemoteAddr})
		if err != nil {
			g.Log.Error(g.LogPrefix+g.Noun+" refused: the audit trail cannot be written",
				"op", op, "who", p.Name, "remote", r.RemoteAddr, "err", err)
			g.Reply(w, http.StatusServiceUnavailable, "refused: the audit trail cannot be written, so the "+g.Noun+
				" was not performed: "+oneLine(err.Error()))
			return
		}
		sw := &StatusWriter{ResponseWriter: w}
		next(sw, r)
		ok, errText := sw.Outcome()
		if err := g.Audit.End(context.WithoutCancel(r.Context()), id, n.Job, ok, errText); err != nil {
			g.Log.Error(g.LogPrefix+"the "+g.Noun+" was performed but its end could not be written to the audit trail (its entry stays started)",
				"op", op, "who", p.Name, "entry", id, "err", err)
		}
	}
}

// oneLine folds a multi-line message (a list of problems, say) into one
// line: its lines, trimmed of white space and list bullets, joined by "; ".
func oneLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(lines[i]), "* "))
	}
	return strings.ReplaceAll(strings.Join(lines, "; "), ":; ", ": ")
}
