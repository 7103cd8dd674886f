package jobhttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/shardjob/shardjob/internal/admin"
)

// History is what GET /history and GET /history/status serve: the
// execution history's pages. jobhttp/historyhttp adapts a
// *history.Recorder or a *history.Reader to it:
//
//	jobhttp.Options{History: historyhttp.New(rec)}
//
// It is an interface so that a handler which serves no history links no
// database driver.
type History interface {
	// Executions answers GET /history: q is the request's query
	// (job, server, kind, failed, since, until, limit, before), the
	// result is the response's JSON body.
	Executions(ctx context.Context, q url.Values) (any, error)
	// Events answers GET /history/status, with the same parameters.
	Events(ctx context.Context, q url.Values) (any, error)
}

// StatusError is an error that a History or a Dispatcher returns to choose
// the status code of the response: http.StatusBadRequest for a bad query
// parameter, for instance. The response's error message is Err's. Other
// errors are answered 504 on a timeout, else 503 from a History and as
// any other failure from a Dispatcher (500, or 503 when the registry
// cannot be reached).
type StatusError struct {
	Code int
	Err  error
}

// Error returns Err's message.
func (e *StatusError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *StatusError) Unwrap() error { return e.Err }

// HTTPStatus returns Code: the status other handlers (the dispatcher's
// REST API) answer e with.
func (e *StatusError) HTTPStatus() int { return e.Code }

// routeHistory serves the execution history and the job status events.
func routeHistory(mux *http.ServeMux, h *handler, src History) {
	hh := &historyHandler{h: h, src: src}
	mux.HandleFunc("GET /history", hh.serve(History.Executions, true))
	mux.HandleFunc("GET /history/status", hh.serve(History.Events, false))
}

type historyHandler struct {
	h   *handler
	src History
}

// serve answers GET /history?job=&server=&kind=&failed=1&since=&until=&limit=&before=
// and GET /history/status with the same parameters, through read.
//
// An execution whose run recorded an output (job.RecordOutput) carries it
// as "output", the JSON value itself, and "outputTruncated": true when the
// stored value was too long and is shown cut (see history.Execution).
//
// With private set (GET /history), a run's output and its error text are
// served only to a request that carries the token, or to every reader
// with Options.OpenOutput: they may quote what a job's target answered
// (an HTTP job's response), which is not for every reader. To the others
// each execution comes without "output" and with "error" empty, and with
// "outputHidden": true or "errorHidden": true where there was one.
func (hh *historyHandler) serve(read func(History, context.Context, url.Values) (any, error), private bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if hh.src == nil {
			hh.h.reply(w, http.StatusNotFound, httpError{Error: "history is not configured: the handler was made without Options.History"})
			return
		}
		ctx, cancel := hh.h.ctx(r)
		defer cancel()
		p, err := read(hh.src, ctx, r.URL.Query())
		if err == nil && private && !hh.h.openOutput && !hh.h.hasToken(r) {
			p, err = hideOutput(p)
		}
		if err != nil {
			hh.fail(w, r, err)
			return
		}
		hh.h.reply(w, http.StatusOK, p)
	}
}

// fail answers a history read's error: the code of a StatusError (400 for
// a bad filter, 500 for a row that cannot be read), 504 on a timeout, 503
// when the database cannot be reached.
func (hh *historyHandler) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusServiceUnavailable
	var se *StatusError
	switch {
	case errors.As(err, &se):
		code = se.Code
	case errors.Is(err, context.DeadlineExceeded):
		code = http.StatusGatewayTimeout
	}
	msg := admin.OneLine(err)
	if code >= 500 {
		hh.h.log.Warn("shardjob history request failed", "path", r.URL.Path, "status", code, "err", msg)
	}
	hh.h.reply(w, code, httpError{Error: msg})
}

// hideOutput returns page p (GET /history's JSON: {"executions": [...],
// ...}) with every execution's output and error text taken out, and a
// flag saying where there was one. It works on the JSON, so that it holds
// for any History, whatever Go type its pages are.
func hideOutput(p any) (any, error) {
	data, err := json.Marshal(p)
	if err != nil {
		return nil, &StatusError{Code: http.StatusInternalServerError, Err: fmt.Errorf("encoding the history page: %w", err)}
	}
	var page map[string]json.RawMessage
	if err := json.Unmarshal(data, &page); err != nil {
		return nil, &StatusError{Code: http.StatusInternalServerError, Err: errors.New("the history page is not a JSON object")}
	}
	var execs []map[string]json.RawMessage
	if raw, ok := page["executions"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &execs); err != nil {
			return nil, &StatusError{Code: http.StatusInternalServerError, Err: errors.New("the history page's executions are not a list of objects")}
		}
	}
	for _, e := range execs {
		if _, ok := e["output"]; ok {
			delete(e, "output")
			delete(e, "outputTruncated")
			e["outputHidden"] = json.RawMessage("true")
		}
		if msg, ok := e["error"]; ok && string(msg) != `""` && string(msg) != "null" {
			e["error"] = json.RawMessage(`""`)
			e["errorHidden"] = json.RawMessage("true")
		}
	}
	if execs != nil {
		raw, err := json.Marshal(execs)
		if err != nil {
			return nil, err
		}
		page["executions"] = raw
	}
	return page, nil
}
