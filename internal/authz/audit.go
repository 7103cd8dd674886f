package authz

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// AuditTrail is where a handler writes who did what: one entry per
// operation (every call that changes something), refused ones included.
// jobhttp/historyhttp adapts a *history.Recorder or *history.Auditor to
// it, which keeps the trail in the history database.
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
	// Read answers a read of the trail (GET /audit): q is the request's
	// query (who, job, server, op, via, since, until, limit, before), the
	// result the response's JSON body.
	Read(ctx context.Context, q url.Values) (any, error)
}

// AuditRecord is one entry a handler writes to its AuditTrail.
type AuditRecord struct {
	// Via is the API the operation came through: "" (or "http") for
	// package jobhttp's handler and console, "dispatch" for the
	// dispatcher's REST API.
	Via string
	// Who is the token's name; empty for a request without a known token.
	Who string
	// Role is the token's role (viewer, operator, admin); empty when
	// unknown.
	Role string
	// Op is the operation: trigger, disable, enable, pause, resume,
	// shutdown, drain, undrain, rebalance, disable-items, enable-items,
	// config, schedule, create, remove (jobhttp); assign, finish, cancel,
	// set-global, put-worker (dispatch).
	Op string
	// Job, Server and Items are the operation's target, where they apply
	// (Items as the request gave them: "3,5"). Through the dispatcher's
	// API, Job is the worker (the queue) and Items the task's UUID.
	Job, Server, Items string
	// Remote is the client's address (the request's RemoteAddr: behind a
	// proxy, the proxy's).
	Remote string
	// Refused says the request was refused before anything was done;
	// Error says why.
	Refused bool
	Error   string
}

// StatusWriter remembers a response's status code and the start of an
// error response's body, for the audit entry's result. Wrap the response
// writer of an audited operation in it; Outcome then says how it ended.
type StatusWriter struct {
	http.ResponseWriter
	code int
	body bytes.Buffer
}

// WriteHeader sends and remembers the status code.
func (w *StatusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write sends b, keeping the start of an error response's body.
func (w *StatusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	if w.code >= 400 && w.body.Len() < 4096 {
		w.body.Write(b[:min(len(b), 4096-w.body.Len())])
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *StatusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Outcome is the response's result: ok (any status below 400), or the
// error it carried: the "error" of a JSON body {"error": "..."}, else the
// body's start.
func (w *StatusWriter) Outcome() (bool, string) {
	if w.code == 0 || w.code < 400 {
		return true, ""
	}
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(w.body.Bytes(), &e); err == nil && e.Error != "" {
		return false, fmt.Sprintf("HTTP %d: %s", w.code, e.Error)
	}
	return false, fmt.Sprintf("HTTP %d: %s", w.code, strings.TrimSpace(w.body.String()))
}
