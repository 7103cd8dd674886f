package dispatch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/shardjob/shardjob/internal/authz"
)

// HandlerConfig configures the REST handler.
type HandlerConfig struct {
	// Token is one admin token, at least 16 bytes, named "token" in the
	// audit trail: the API's only token before roles existed, kept so
	// that a configuration of one token still works. It may be given
	// with Tokens and TokensFile (its name and value must then be
	// unique).
	Token string
	// Tokens are the API's tokens, each with its holder's name and role:
	// viewer (reads), operator (assign, finish, cancel) or admin (the
	// global cap and the workers too, and the audit trail). Every call
	// needs a token, sent as "Authorization: Bearer TOKEN"; at least one
	// of Token, Tokens and TokensFile is required. Tokens are compared in
	// constant time and never logged.
	Tokens []Token
	// TokensFile, when set, is a tokens file (the YAML list
	// jobhttp.LoadTokens reads; shardjob console reads the same) whose
	// tokens are added to Tokens.
	TokensFile string
	// Audit, when set, receives one entry per call that changes
	// something (PUT and POST), refused ones included, before it is
	// performed: when it cannot be written the call is refused with 503
	// and not performed. GET /v1/audit serves it to admins. Typically
	// historyhttp.Audit(aud) over a *history.Auditor. Nil: nothing is
	// audited.
	Audit AuditTrail
	// MaxBody bounds a request body in bytes. Default 8 MiB.
	MaxBody int64
	// MaxListBytes bounds a list answer (GET /v1/tasks): tasks are added
	// while the encoded answer stays within it, and "next" says where the
	// next page starts. A page holds at least one task, however large.
	// Default 1 MiB.
	MaxListBytes int
	// Logger receives server-side errors. Default slog.Default().
	Logger *slog.Logger
}

// NewHandler serves the dispatcher's operations as JSON over HTTP; each
// call needs a token whose role is at least the one named:
//
//	PUT  /v1/global                 admin     {"max_running": 100}
//	GET  /v1/global                 viewer
//	PUT  /v1/workers/{name}         admin     {"max_running": 10, "late_policy": "run", "webhook_url": "...", "webhook_secret": "..."}
//	GET  /v1/workers, /v1/workers/{name}
//	                                viewer
//	POST /v1/assign                 operator  {"worker": "w", "start": RFC 3339, "end": RFC 3339, "max_retries": 2, "timeout": "30s",
//	                                           "tasks": [{"external_id": "r1", "info": "any text"}]}
//	GET  /v1/tasks/{uuid}           viewer
//	GET  /v1/tasks?worker=&status=&external_id=&after=&limit=
//	                                viewer    {"tasks": [...], "next": "uuid"}: at most MaxListBytes (1 MiB);
//	                                          "next", when present, is the after= of the next page
//	POST /v1/tasks/{uuid}/finish    operator  optional {"attempt": 2}
//	POST /v1/tasks/{uuid}/cancel    operator
//	GET  /v1/whoami                 viewer    {"name": "ci", "role": "operator", "audited": true}
//	GET  /v1/audit                  admin     the audit trail (HandlerConfig.Audit), newest first:
//	                                          ?who=&job=&op=&via=&since=&until=&limit=&before=
//
// Every PUT and POST is written to HandlerConfig.Audit (with Via
// "dispatch", the worker as its job and the task's UUID as its items):
// set-global, put-worker, assign, finish, cancel; refusals included.
//
// Errors are {"error": "..."} with 400 for bad input (garbage JSON,
// unknown fields, invalid values), 401 without a known token, 403 for a
// token whose role is too low (naming the role needed), 503 when the
// audit trail cannot be written (the call was not performed), 404 for an
// unknown worker or task, 409 for a finish or cancel the task's state
// refuses: a finish whose attempt no longer holds the task (stale), of a
// task not running, or naming no attempt for a task finished already; a
// cancel of a task that ended. A 409 means nothing was changed by that
// call. A finish naming the attempt that finished the task answers 200
// again, so a client retries a finish whose answer it lost safely.
//
// A bad token configuration is an error wrapping ErrInvalid and
// ErrInvalidTokens that names the problem and the token's name, never the
// token.
func NewHandler(d *Dispatcher, cfg HandlerConfig) (http.Handler, error) {
	toks, err := handlerTokens(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.MaxBody < 0 {
		return nil, fmt.Errorf("%w: MaxBody %d is negative", ErrInvalid, cfg.MaxBody)
	}
	if cfg.MaxBody == 0 {
		cfg.MaxBody = 8 << 20
	}
	if cfg.MaxListBytes < 0 {
		return nil, fmt.Errorf("%w: MaxListBytes %d is negative", ErrInvalid, cfg.MaxListBytes)
	}
	if cfg.MaxListBytes == 0 {
		cfg.MaxListBytes = 1 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	h := &api{d: d, cfg: cfg, keys: authz.NewKeyring(toks), refusals: authz.NewRefusalLog(cfg.Logger, "dispatch: ")}
	h.gate = h.newGate()
	h.mux = http.NewServeMux()
	h.mux.HandleFunc("PUT /v1/global", h.gate.Op(RoleAdmin, "set-global", h.putGlobal))
	h.mux.HandleFunc("GET /v1/global", h.read(h.getGlobal))
	h.mux.HandleFunc("PUT /v1/workers/{name}", h.gate.Op(RoleAdmin, "put-worker", h.putWorker))
	h.mux.HandleFunc("GET /v1/workers/{name}", h.read(h.getWorker))
	h.mux.HandleFunc("GET /v1/workers", h.read(h.listWorkers))
	h.mux.HandleFunc("POST /v1/assign", h.gate.Op(RoleOperator, "assign", h.assign))
	h.mux.HandleFunc("GET /v1/tasks/{uuid}", h.read(h.getTask))
	h.mux.HandleFunc("GET /v1/tasks", h.read(h.listTasks))
	h.mux.HandleFunc("POST /v1/tasks/{uuid}/finish", h.gate.Op(RoleOperator, "finish", h.finish))
	h.mux.HandleFunc("POST /v1/tasks/{uuid}/cancel", h.gate.Op(RoleOperator, "cancel", h.cancel))
	h.mux.HandleFunc("GET /v1/whoami", h.read(h.whoami))
	h.mux.HandleFunc("GET /v1/audit", h.read(h.auditRead))
	return h, nil
}

type api struct {
	d        *Dispatcher
	cfg      HandlerConfig
	mux      *http.ServeMux
	keys     *authz.Keyring
	refusals *authz.RefusalLog // refused calls, rate-limited
	gate     *authz.Gate       // the roles and audit of the calls that change something
}

// ServeHTTP bounds the request's body and serves it. Each route checks
// the token itself; a request no route matches is answered 401 without a
// known token (404 or 405 with one), so that an unknown caller learns
// nothing of the routes.
func (h *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.refusals.Flush()
	r.Body = http.MaxBytesReader(w, r.Body, h.cfg.MaxBody)
	if _, pattern := h.mux.Handler(r); pattern == "" {
		if _, _, ok := h.keys.Identify(r); !ok {
			kind := h.gate.RefusedToken()
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				kind = refusedRead
			}
			h.refusals.Refused(kind, "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
			unauthorized(w)
			return
		}
	}
	h.mux.ServeHTTP(w, r)
}

type errorBody struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	// The status is sent; a client gone away is all an error can mean here.
	_ = json.NewEncoder(w).Encode(v)
}

func (h *api) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrInvalid):
		code = http.StatusBadRequest
	case errors.Is(err, ErrUnknownWorker), errors.Is(err, ErrUnknownTask):
		code = http.StatusNotFound
	case errors.Is(err, ErrAlreadyFinished), errors.Is(err, ErrNotRunning), errors.Is(err, ErrStaleLease), errors.Is(err, ErrFinal),
		errors.Is(err, ErrTooManyWorkers):
		code = http.StatusConflict
	case errors.Is(err, ErrClosed):
		code = http.StatusServiceUnavailable
	}
	if code == http.StatusInternalServerError {
		h.cfg.Logger.Error("dispatch: REST call failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeJSON(w, code, errorBody{err.Error()})
}

// decode reads a JSON body strictly: unknown fields, trailing data and
// syntax errors are ErrInvalid. An empty body is allowed if optional.
func decode(r *http.Request, v any, optional bool) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return fmt.Errorf("%w: request body over %d bytes", ErrInvalid, tooBig.Limit)
		}
		return fmt.Errorf("%w: reading the body: %v", ErrInvalid, err)
	}
	if len(body) == 0 && optional {
		return nil
	}
	dec := json.NewDecoder(bytesReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: bad JSON body: %v", ErrInvalid, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: bad JSON body: data after the object", ErrInvalid)
	}
	return nil
}

type globalJSON struct {
	MaxRunning *int `json:"max_running"`
	Running    int  `json:"running"`
}

func (h *api) putGlobal(w http.ResponseWriter, r *http.Request) {
	var in struct {
		MaxRunning *int `json:"max_running"`
	}
	if err := decode(r, &in, false); err != nil {
		h.fail(w, r, err)
		return
	}
	if in.MaxRunning == nil {
		h.fail(w, r, fmt.Errorf("%w: max_running is required", ErrInvalid))
		return
	}
	if err := h.d.SetGlobalMax(r.Context(), *in.MaxRunning); err != nil {
		h.fail(w, r, err)
		return
	}
	h.getGlobal(w, r)
}

func (h *api) getGlobal(w http.ResponseWriter, r *http.Request) {
	g, err := h.d.Global(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, globalJSON{MaxRunning: &g.MaxRunning, Running: g.Running})
}

type workerJSON struct {
	Name          string     `json:"name"`
	MaxRunning    int        `json:"max_running"`
	Running       int        `json:"running"`
	LatePolicy    LatePolicy `json:"late_policy"`
	WebhookURL    string     `json:"webhook_url,omitempty"`
	HasWebhookKey bool       `json:"webhook_secret_set,omitempty"`
}

func toWorkerJSON(x Worker) workerJSON {
	return workerJSON{Name: x.Name, MaxRunning: x.MaxRunning, Running: x.Running, LatePolicy: x.LatePolicy, WebhookURL: x.WebhookURL, HasWebhookKey: x.WebhookSecret != ""}
}

func (h *api) putWorker(w http.ResponseWriter, r *http.Request) {
	var in struct {
		MaxRunning    *int       `json:"max_running"`
		LatePolicy    LatePolicy `json:"late_policy"`
		WebhookURL    string     `json:"webhook_url"`
		WebhookSecret string     `json:"webhook_secret"`
	}
	if err := decode(r, &in, false); err != nil {
		h.fail(w, r, err)
		return
	}
	if in.MaxRunning == nil {
		h.fail(w, r, fmt.Errorf("%w: max_running is required", ErrInvalid))
		return
	}
	wk := Worker{Name: r.PathValue("name"), MaxRunning: *in.MaxRunning, LatePolicy: in.LatePolicy, WebhookURL: in.WebhookURL, WebhookSecret: in.WebhookSecret}
	if err := h.d.PutWorker(r.Context(), wk); err != nil {
		h.fail(w, r, err)
		return
	}
	h.getWorker(w, r)
}

func (h *api) getWorker(w http.ResponseWriter, r *http.Request) {
	wk, err := h.d.Worker(r.Context(), r.PathValue("name"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toWorkerJSON(wk))
}

func (h *api) listWorkers(w http.ResponseWriter, r *http.Request) {
	ws, err := h.d.Workers(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := make([]workerJSON, 0, len(ws))
	for _, x := range ws {
		out = append(out, toWorkerJSON(x))
	}
	writeJSON(w, http.StatusOK, map[string]any{"workers": out})
}

// TaskJSON is a task as the REST API and webhooks show it.
type TaskJSON struct {
	UUID            string     `json:"uuid"`
	Worker          string     `json:"worker"`
	ExternalID      string     `json:"external_id"`
	Info            string     `json:"info"`
	ExpectedStart   time.Time  `json:"expected_start"`
	AcceptableStart time.Time  `json:"acceptable_start"`
	RunAt           time.Time  `json:"run_at"`
	Status          Status     `json:"status"`
	Attempt         int        `json:"attempt"`
	MaxRetries      int        `json:"max_retries"`
	Timeout         string     `json:"timeout"`
	Node            string     `json:"node,omitempty"`
	Deadline        *time.Time `json:"deadline,omitempty"`
	Late            bool       `json:"late"`
	LastError       string     `json:"last_error,omitempty"`
	CreatedAt       time.Time  `json:"created_at"`
	StartedAt       *time.Time `json:"started_at,omitempty"`
	EndedAt         *time.Time `json:"ended_at,omitempty"`
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// ToJSON is the task's JSON form.
func (t Task) ToJSON() TaskJSON {
	return TaskJSON{UUID: t.UUID, Worker: t.Worker, ExternalID: t.ExternalID, Info: string(t.Info),
		ExpectedStart: t.ExpectedStart, AcceptableStart: t.AcceptableStart, RunAt: t.RunAt, Status: t.Status,
		Attempt: t.Attempt, MaxRetries: t.MaxRetries, Timeout: t.Timeout.String(), Node: t.Node, Deadline: optTime(t.Deadline),
		Late: t.Late, LastError: t.LastError, CreatedAt: t.CreatedAt, StartedAt: optTime(t.StartedAt), EndedAt: optTime(t.EndedAt)}
}

func (h *api) assign(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Worker     string    `json:"worker"`
		Start      time.Time `json:"start"`
		End        time.Time `json:"end"`
		MaxRetries int       `json:"max_retries"`
		Timeout    string    `json:"timeout"`
		Tasks      []struct {
			ExternalID string `json:"external_id"`
			Info       string `json:"info"`
		} `json:"tasks"`
	}
	if err := decode(r, &in, false); err != nil {
		h.fail(w, r, err)
		return
	}
	noteWorker(r, in.Worker)
	a := Assignment{Worker: in.Worker, Start: in.Start, End: in.End, MaxRetries: in.MaxRetries}
	if in.Timeout != "" {
		d, err := time.ParseDuration(in.Timeout)
		if err != nil {
			h.fail(w, r, fmt.Errorf("%w: timeout %q: %v", ErrInvalid, in.Timeout, err))
			return
		}
		a.Timeout = d
	}
	for _, t := range in.Tasks {
		a.Tasks = append(a.Tasks, NewTask{ExternalID: t.ExternalID, Info: []byte(t.Info)})
	}
	ts, err := h.d.Assign(h.d.remoteTrace(r), a)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := make([]TaskJSON, len(ts))
	for i, t := range ts {
		out[i] = t.ToJSON()
	}
	writeJSON(w, http.StatusOK, map[string]any{"tasks": out})
}

func (h *api) getTask(w http.ResponseWriter, r *http.Request) {
	t, err := h.d.Task(r.Context(), r.PathValue("uuid"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	noteWorker(r, t.Worker) // a finish's or a cancel's worker, for its audit entry
	writeJSON(w, http.StatusOK, t.ToJSON())
}

func (h *api) listTasks(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for k := range q {
		switch k {
		case "worker", "status", "external_id", "after", "limit":
		default:
			h.fail(w, r, fmt.Errorf("%w: unknown query parameter %q", ErrInvalid, k))
			return
		}
	}
	f := Filter{Worker: q.Get("worker"), Status: Status(q.Get("status")), ExternalID: q.Get("external_id"), After: q.Get("after")}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil {
			h.fail(w, r, fmt.Errorf("%w: limit %q is not a number", ErrInvalid, l))
			return
		}
		f.Limit = n
	}
	budget := h.cfg.MaxListBytes
	f.MaxBytes = budget
	ts, err := h.d.Tasks(r.Context(), f)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	page, more, err := budgetPage(ts, budget)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	infos := 0
	for _, t := range ts {
		infos += len(t.Info)
	}
	// More may follow if the page left tasks out, if the store stopped
	// at the budget, or if it stopped at the limit.
	out := taskPage{Tasks: page}
	if more || infos >= budget || len(ts) == f.Limit {
		out.Next = ts[len(page)-1].UUID
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	// The status is sent; a client gone away is all an error can mean here.
	_ = json.NewEncoder(w).Encode(out)
}

// taskPage is a list answer: the tasks, and where the next page starts
// (Filter.After) when more may follow.
type taskPage struct {
	Tasks []json.RawMessage `json:"tasks"`
	Next  string            `json:"next,omitempty"`
}

// budgetPage encodes tasks in order while the answer stays within budget
// bytes (always at least one); more reports that some were left out.
func budgetPage(ts []Task, budget int) (page []json.RawMessage, more bool, err error) {
	page = []json.RawMessage{}
	// The envelope: {"tasks":[...],"next":"<uuid>"} and a newline.
	size := len(`{"tasks":[],"next":""}`) + 1 + 64
	for i, t := range ts {
		b, err := json.Marshal(t.ToJSON())
		if err != nil {
			return nil, false, err
		}
		if i > 0 && size+len(b)+1 > budget {
			return page, true, nil
		}
		size += len(b) + 1
		page = append(page, b)
	}
	return page, false, nil
}

func (h *api) finish(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Attempt int `json:"attempt"`
	}
	if err := decode(r, &in, true); err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.d.FinishAttempt(r.Context(), r.PathValue("uuid"), in.Attempt); err != nil {
		h.noteTaskWorker(r)
		h.fail(w, r, err)
		return
	}
	h.getTask(w, r)
}

func (h *api) cancel(w http.ResponseWriter, r *http.Request) {
	if err := decode(r, &struct{}{}, true); err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.d.Cancel(r.Context(), r.PathValue("uuid")); err != nil {
		h.noteTaskWorker(r)
		h.fail(w, r, err)
		return
	}
	h.getTask(w, r)
}
