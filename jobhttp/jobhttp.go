// Package jobhttp serves the operator's view of a shardjob namespace over
// HTTP: the state of its jobs as JSON and the operations of the shardjob
// command (trigger, server flags, disabled items, config, remove), as an
// [http.Handler] an application mounts next to its other admin endpoints.
//
// It stands above package job and uses what the shardjob command uses: the
// same reads and operations, the same config codec (a document is decoded
// and validated exactly as the instances decode it), the same JSON. Package
// job does not import it; an application that wants no HTTP endpoint does
// not link it.
//
// The execution history's and the dispatcher's pages are optional, and
// their adapters live in packages of their own, jobhttp/historyhttp and
// jobhttp/dispatchhttp, so that a handler which serves only the scheduler
// links no database driver:
//
//	h := jobhttp.NewHandler(rc, jobhttp.Options{Token: token,
//		History: historyhttp.New(rec), Dispatcher: dispatchhttp.New(d)})
package jobhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/shardjob/shardjob/internal/admin"
	"github.com/shardjob/shardjob/internal/authz"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// Options configures [NewHandler].
type Options struct {
	// Token is one admin token, named "token" (LegacyTokenName) in the
	// audit trail: the handler's only token before roles existed, kept so
	// that such a configuration works unchanged. It may be combined with
	// Tokens and TokensFile (its name and value must then be unique).
	Token string
	// Tokens are the handler's tokens, each with its holder's name and
	// role (see Role): a viewer reads, an operator also steers jobs and
	// servers, an admin also changes and creates definitions and reads the
	// audit trail. A request is allowed by the role of the token it
	// carries in "Authorization: Bearer <token>"; a missing or unknown
	// token is refused with 401 Unauthorized, a token whose role is too
	// low with 403 Forbidden naming the role needed. With no token at all
	// (Token, Tokens and TokensFile empty) the handler is read-only: every
	// POST is refused with 403. Tokens are compared in constant time and
	// never logged. See LoadTokens and TokensFromEnv.
	Tokens []Token
	// TokensFile, when set, is a tokens file (see LoadTokens) read by New,
	// whose tokens are added to Tokens.
	TokensFile string
	// Audit, when set, receives one entry per operation (every POST):
	// who (the token's name), what (the operation and its job, server or
	// items), when, from where (the client's address) and the result;
	// refused requests too (those without a known token at most one per
	// 10 s). When an entry cannot be written the operation is refused with
	// 503 and not performed. GET /audit serves it to admins. Typically
	// historyhttp.Audit(rec). Nil: nothing is audited (the log has one
	// line per operation).
	Audit AuditTrail
	// Logger receives one line per operation performed (Info) and per
	// failed request (Warn). Refused requests (a missing or wrong token,
	// a cross-origin POST) are written at most once per 10 s per kind of
	// refusal, the others counted and written as one line ("refused 57
	// requests in the last 10s: ..."), so that a client cannot flood the
	// log. Nil means slog.Default().
	Logger *slog.Logger
	// Metrics, when set, is served at GET /metrics: typically
	// (*metrics.Metrics).Handler(), the instance's Prometheus metrics.
	Metrics http.Handler
	// History, when set, is served at GET /history (executions) and GET
	// /history/status (job status events): typically the instance's
	// *history.Recorder, as historyhttp.New(rec). Without it those answer
	// 404.
	History History
	// ProtectReads makes every GET need the token too, as the POSTs do
	// (the console's own files excepted: they hold no data, and the page
	// asks the operator for the token). With ProtectReads and no Token,
	// every read is refused with 403 Forbidden.
	ProtectReads bool
	// OpenOutput serves the runs' output and error text in GET /history
	// to every reader. By default they are served only to requests that
	// carry one of the tokens, of any role (every read does with
	// ProtectReads): a run's output
	// or error may quote what its target answered — an HTTP job's
	// response, a script's output — which is not for everyone who can
	// read the job list. Without the token each execution comes without
	// them, flagged "outputHidden" or "errorHidden".
	OpenOutput bool
	// MaxDefinitions bounds the jobs defined at run time (POST /jobs) in
	// the namespace: one more is refused with 409 Conflict, naming the
	// limit. 0 means jobfile.DefaultMaxDefinitions (1,000); negative, no
	// bound.
	MaxDefinitions int
	// MaxDefinitionBytes bounds one definition's document: a larger one
	// is refused with 413, naming the limit. 0 means
	// jobfile.DefaultMaxDefinitionBytes (64 KiB); at most
	// job.MaxConfigBytes.
	MaxDefinitionBytes int
	// Dispatcher, if set, is served read-only at GET /dispatch/workers
	// and on the console's dispatcher page: typically a
	// *dispatch.Dispatcher, as dispatchhttp.New(d). Nil: those answer 404.
	Dispatcher Dispatcher
}

// httpRequestTimeout bounds the ZooKeeper work of one request (a remove
// waits for the instances on top of it).
const httpRequestTimeout = 30 * time.Second

// maxConfigBody is the largest config document read: larger than a config
// may be (job.MaxConfigBytes), so that an oversized one is answered with
// the field that is too large.
const maxConfigBody = job.MaxDocumentBytes

// NewHandler returns an http.Handler that serves the state of the jobs
// in rc's namespace as JSON and performs the operator's operations: the
// same as the shardjob command. Mount it under a prefix of your own, on the
// port of your application's admin endpoints:
//
//	mux.Handle("/shardjob/", http.StripPrefix("/shardjob", jobhttp.NewHandler(rc, jobhttp.Options{Token: os.Getenv("SHARDJOB_TOKEN")})))
//
// GET endpoints, open to every client that can reach the handler (with
// Options.ProtectReads, only to those that send the token):
//
//	GET  /jobs                    every job: status, cron, items, instances online, leader, last and next fire
//	GET  /jobs/{job}              one job: per server and per item
//	GET  /jobs/{job}/dump         the job's raw registry nodes, for bug reports
//	GET  /jobs/{job}/config       the job's config document (YAML)
//	GET  /jobs/{job}/backfill     the job's backfill and its progress
//
// POST endpoints, which need a token whose role allows them (operator,
// or admin for create, config, schedule and remove; see New):
//
//	POST /jobs[?unfollowed=true]                 create a script or http job from its YAML job document
//	                                             (the body; see "Creating jobs at run time" below)
//	POST /jobs/{job}/trigger[?server=S]          run once now, on every online server or on S
//	POST /jobs/{job}/backfill                    {"from": T1, "to": T2, "rate": N}: run the fires of a
//	                                             past range again on each item's owner
//	POST /jobs/{job}/backfill/cancel             stop it; .../resume goes on from its progress
//	POST /jobs/{job}/config                      replace the config with the YAML request body
//	POST /jobs/{job}/disable-items?items=3,5     keep items out of every fire
//	POST /jobs/{job}/enable-items?items=3,5
//	POST /jobs/{job}/remove[?wait=30s]           stop the job on every instance and delete its nodes
//	POST /servers/{server}/disable[?job=J]       the server takes no items (of J, or of every job)
//	POST /servers/{server}/enable[?job=J]
//	POST /servers/{server}/pause[?job=J]         the server stops firing; its items are not moved
//	POST /servers/{server}/resume[?job=J]
//	POST /servers/{server}/shutdown[?job=J]      the instance leaves the job cleanly
//	POST /servers/{server}/drain[?wait=10m]      the server takes no new units and hands its units
//	                                             over; with wait, answers once it is safe to stop
//	POST /servers/{server}/undrain               the server takes units again
//	POST /rebalance                              every job places its items again before its next fire
//	POST /jobs/{job}/schedule                    {"cron": "...", "shardingTotalCount": N}: edit those
//	                                             fields of the stored config, validated first
//
// and GET /instances: every instance's units, cap, alarm, load score,
// drain state and items running; GET /metrics serves Options.Metrics;
// GET /dispatch/workers: the dispatcher's caps and its workers' tasks by
// state (Options.Dispatcher).
//
// GET /chains[?job=J]: the jobs that run after others (Config.After) as
// a graph in layers, each with where it stands at its last fire
// (completed, running, waiting for a parent, failed, skipped, ...); with
// job, only that job's chain.
//
// GET /history and GET /history/status serve Options.History: pages of
// executions and of job status events, newest first, as JSON
// ({"executions": [...], "next": "..."} and {"events": [...], "next":
// "..."}). Parameters: job, server, kind, failed=1, since and until (a
// duration before now such as 1h, or an RFC 3339 time), limit (default 50,
// at most 1000) and before (the "next" of the previous page). A bad
// parameter is answered 400 naming it. A run's output and error text are
// in GET /history only for requests with the token (or for every reader
// with Options.OpenOutput); the others get each execution without them,
// flagged "outputHidden" or "errorHidden".
//
// GET /console/ is the web console: an embedded page over these same
// endpoints, which works under any prefix the handler is mounted at.
// Every response carries the headers that keep pages from being framed,
// sniffed or leaking their address; POSTs from another site (by their
// Sec-Fetch-Site or Origin header) are refused with 403 whatever token
// they carry, and request bodies are bounded.
//
// Errors are JSON objects {"error": "..."}: 404 for an unknown job or
// server, 400 for bad input (a config that does not validate, an item out
// of range), 413 for a config document or value too large to store, 409
// when the operation needs an online instance there is not,
// 503 when ZooKeeper cannot be reached, 504 on a timeout.
//
// Creating jobs at run time: POST /jobs takes one job's YAML document,
// with the keys of one entry of a job file's jobs: list (JSON with the same
// keys is accepted as YAML), of type script or http. It gets exactly the
// checks a following instance makes before it runs a definition
// (jobfile.DefineWith): decoded and validated by the job file's decoder,
// its section and error handler built, and the jobs it runs after
// (after:) must be definitions too, of the same schedule, with no cycle.
// It is stored in the job's definition node with its config, or refused
// with 400 and the decoder's message, storing nothing; 409 when a job of
// that name exists, or when the namespace holds Options.MaxDefinitions
// definitions already; 413 when the document is larger than
// Options.MaxDefinitionBytes. Instances run it only if their program
// follows the namespace's definitions (jobfile.Follow, shardjob run
// --follow), and script jobs only where that was allowed: when no live
// instance follows the definition's type, it is refused with 422 and the
// reason ("no instance follows script jobs"), unless the request says
// POST /jobs?unfollowed=true, which stores it for instances still to
// come. It answers 201 Created with the job, the servers that follow its
// type ("followers") and, when there are none, a "warning" saying so.
// POST /jobs/{job}/remove deletes the definition with the rest of the
// job.
//
// The config written through POST /jobs/{job}/config is validated as the
// instances will validate it — including the sharding strategy, which must
// be registered in this process — and never written when invalid.
//
// NewHandler is New for a handler whose Options cannot be wrong (no
// Tokens, no TokensFile): with Options that New refuses, it logs the
// error and answers every request 500 with it, performing nothing.
func NewHandler(rc regcenter.Center, opts Options) http.Handler {
	h, err := New(rc, opts)
	if err == nil {
		return h
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	log.Error("shardjob admin: the handler's options are invalid; every request is refused", "err", err)
	msg := "the shardjob handler is misconfigured: " + admin.OneLine(err)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(&handler{}).reply(w, http.StatusInternalServerError, httpError{Error: msg})
	})
}

// New is NewHandler, with its Options checked first: the tokens (Token,
// Tokens and TokensFile together) must each have a name, a known role and
// a non-empty token, names and tokens unique, and the tokens file must be
// readable. An error wraps ErrInvalidTokens and names the problem.
//
// Roles: GETs are open (with ProtectReads, any token's); GET /audit needs
// admin. POSTs need operator (trigger, backfill, disable, enable, pause, resume,
// shutdown, disable-items, enable-items, drain, undrain, rebalance) or
// admin (config, schedule, create: POST /jobs, remove). GET /whoami
// answers the role of the request's token ({"name", "role", "readOnly",
// "audited"}; role "" without a token).
//
// GET /audit[?who=&job=&server=&op=&since=&until=&limit=&before=] serves
// Options.Audit's entries, newest first, to admins only: who did what is
// for those who administer the namespace.
func New(rc regcenter.Center, opts Options) (http.Handler, error) {
	toks, err := authz.Collect(opts.Token, opts.Tokens, opts.TokensFile)
	if err != nil {
		return nil, err
	}
	h := &handler{rc: rc, adm: admin.New(rc, admin.JobCodec(true)), keys: authz.NewKeyring(toks), log: opts.Logger,
		protectReads: opts.ProtectReads, openOutput: opts.OpenOutput, dispatcher: opts.Dispatcher, audit: opts.Audit,
		maxDefinitions: opts.MaxDefinitions, maxDefinitionBytes: opts.MaxDefinitionBytes}
	if h.log == nil {
		h.log = slog.Default()
	}
	h.refusals = authz.NewRefusalLog(h.log, "shardjob admin: ")
	h.gate = h.newGate()
	mux := h.newMux() // the console's routes, behind the guard (guard.go)
	mux.HandleFunc("GET /{$}", h.index)
	mux.HandleFunc("GET /whoami", h.whoami)
	mux.HandleFunc("GET /audit", h.auditRead)
	mux.HandleFunc("GET /jobs", h.jobs)
	mux.HandleFunc("POST /jobs", h.op(RoleAdmin, "create", h.create))
	mux.HandleFunc("GET /jobs/{job}", h.status)
	mux.HandleFunc("GET /jobs/{job}/dump", h.dump)
	mux.HandleFunc("GET /jobs/{job}/config", h.configGet)
	mux.HandleFunc("POST /jobs/{job}/config", h.op(RoleAdmin, "config", h.configSet))
	mux.HandleFunc("POST /jobs/{job}/trigger", h.op(RoleOperator, "trigger", h.trigger))
	mux.HandleFunc("GET /jobs/{job}/backfill", h.backfillStatus)
	mux.HandleFunc("POST /jobs/{job}/backfill", h.op(RoleOperator, "backfill", h.backfillStart))
	mux.HandleFunc("POST /jobs/{job}/backfill/cancel", h.op(RoleOperator, "backfill", h.backfillState(false)))
	mux.HandleFunc("POST /jobs/{job}/backfill/resume", h.op(RoleOperator, "backfill", h.backfillState(true)))
	mux.HandleFunc("POST /jobs/{job}/remove", h.op(RoleAdmin, "remove", h.remove))
	mux.HandleFunc("POST /jobs/{job}/disable-items", h.op(RoleOperator, "disable-items", h.items(true)))
	mux.HandleFunc("POST /jobs/{job}/enable-items", h.op(RoleOperator, "enable-items", h.items(false)))
	for name, op := range map[string]func(*admin.Admin, context.Context, string, string) ([]admin.Change, error){
		"disable":  (*admin.Admin).Disable,
		"enable":   (*admin.Admin).Enable,
		"pause":    (*admin.Admin).Pause,
		"resume":   (*admin.Admin).Resume,
		"shutdown": (*admin.Admin).Shutdown,
	} {
		mux.HandleFunc("POST /servers/{server}/"+name, h.op(RoleOperator, name, h.serverOp(name, op)))
	}
	mux.HandleFunc("GET /instances", h.instances)
	mux.HandleFunc("POST /servers/{server}/drain", h.op(RoleOperator, "drain", h.drain))
	mux.HandleFunc("POST /servers/{server}/undrain", h.op(RoleOperator, "undrain", h.undrain))
	mux.HandleFunc("POST /rebalance", h.op(RoleOperator, "rebalance", h.rebalance))
	if opts.Metrics != nil {
		mux.Handle("GET /metrics", opts.Metrics)
	}
	routeHistory(mux.ServeMux, h, opts.History)
	return mux, nil
}

type handler struct {
	rc           regcenter.Center
	adm          *admin.Admin
	keys         *authz.Keyring // the tokens; empty: read-only
	audit        AuditTrail     // nil: operations are logged only
	log          *slog.Logger
	protectReads bool
	openOutput   bool // GET /history serves output and error text without the token
	// POST /jobs's limits (jobfile.DefineOptions).
	maxDefinitions, maxDefinitionBytes int
	dispatcher                         Dispatcher
	refusals                           *authz.RefusalLog // refused requests, rate-limited (guard.go)
	gate                               *authz.Gate       // the operations' roles and audit (audit.go)
}

type httpError struct {
	Error string `json:"error"`
}

func (h *handler) reply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = admin.WriteJSON(w, v)
}

// fail replies with err's status code and message.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, admin.ErrUnknownJob), errors.Is(err, admin.ErrUnknownServer):
		code = http.StatusNotFound
	case errors.Is(err, job.ErrConfigTooLarge), errors.Is(err, regcenter.ErrTooLarge):
		code = http.StatusRequestEntityTooLarge
	case errors.Is(err, admin.ErrInvalid):
		code = http.StatusBadRequest
	case errors.Is(err, admin.ErrNotOnline), errors.Is(err, admin.ErrStillOnline), errors.Is(err, admin.ErrConflict),
		errors.Is(err, admin.ErrNotDrained), errors.Is(err, admin.ErrHasDependents):
		code = http.StatusConflict
	case errors.Is(err, context.DeadlineExceeded):
		code = http.StatusGatewayTimeout
	case errors.Is(err, regcenter.ErrConnectionLoss), errors.Is(err, regcenter.ErrClosed),
		errors.Is(err, regcenter.ErrSessionLost), errors.Is(err, regcenter.ErrUnreachable):
		code = http.StatusServiceUnavailable
	}
	msg := admin.OneLine(err)
	if code >= 500 {
		h.log.Warn("shardjob admin request failed", "method", r.Method, "path", r.URL.Path, "status", code, "err", msg)
	}
	h.reply(w, code, httpError{Error: msg})
}

func (h *handler) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), httpRequestTimeout)
}

func (h *handler) done(r *http.Request, op string, args ...any) {
	if n := note(r); n != nil {
		args = append(args, "who", n.Who.Name)
	}
	h.log.Info("shardjob admin: "+op, append(args, "remote", r.RemoteAddr)...)
}

func (h *handler) index(w http.ResponseWriter, r *http.Request) {
	h.reply(w, http.StatusOK, map[string]any{
		"namespace": h.adm.Namespace(),
		"endpoints": []string{
			"GET /jobs", "POST /jobs", "GET /jobs/{job}", "GET /jobs/{job}/dump", "GET /jobs/{job}/config",
			"POST /jobs/{job}/trigger[?server=S]", "POST /jobs/{job}/config", "POST /jobs/{job}/remove[?wait=30s]",
			"GET /jobs/{job}/backfill", "POST /jobs/{job}/backfill", "POST /jobs/{job}/backfill/cancel", "POST /jobs/{job}/backfill/resume",
			"POST /jobs/{job}/disable-items?items=3,5", "POST /jobs/{job}/enable-items?items=3,5",
			"POST /servers/{server}/disable[?job=J]", "POST /servers/{server}/enable[?job=J]",
			"POST /servers/{server}/pause[?job=J]", "POST /servers/{server}/resume[?job=J]",
			"POST /servers/{server}/shutdown[?job=J]",
			"GET /instances", "POST /servers/{server}/drain[?wait=10m]", "POST /servers/{server}/undrain",
			"POST /rebalance", "GET /history", "GET /history/status",
			"POST /jobs/{job}/schedule", "GET /chains[?job=J]", "GET /dispatch/workers", "GET /console/",
			"GET /whoami", "GET /audit",
		},
		"readOnly": h.keys.Empty(),
	})
}

func (h *handler) jobs(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	jobs, err := h.adm.Jobs(ctx)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if jobs == nil {
		jobs = []admin.JobSummary{}
	}
	h.reply(w, http.StatusOK, jobs)
}

func (h *handler) status(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	st, err := h.adm.Status(ctx, r.PathValue("job"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.reply(w, http.StatusOK, st)
}

func (h *handler) dump(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	d, err := h.adm.Dump(ctx, r.PathValue("job"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.reply(w, http.StatusOK, d)
}

func (h *handler) configGet(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	data, err := h.adm.ConfigGet(ctx, r.PathValue("job"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/yaml; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(data)
}

func (h *handler) configSet(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxConfigBody))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		h.fail(w, r, fmt.Errorf("%w: %w: the config document is larger than %d bytes; a config may be at most %d",
			admin.ErrInvalid, job.ErrConfigTooLarge, tooLarge.Limit, job.MaxConfigBytes))
		return
	}
	if err != nil {
		h.fail(w, r, fmt.Errorf("%w: reading the config document: %w", admin.ErrInvalid, err))
		return
	}
	ctx, cancel := h.ctx(r)
	defer cancel()
	jobName := r.PathValue("job")
	cfg, changed, err := h.adm.ConfigSet(ctx, jobName, data)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.done(r, "config set", "job", jobName, "changed", changed, "cron", cfg.Cron, "items", cfg.ShardingTotalCount)
	h.reply(w, http.StatusOK, map[string]any{"job": jobName, "changed": changed, "config": cfg})
}

func (h *handler) trigger(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	jobName, server := r.PathValue("job"), r.URL.Query().Get("server")
	changes, err := h.adm.Trigger(ctx, jobName, server)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.done(r, "trigger", "job", jobName, "server", server)
	h.reply(w, http.StatusOK, map[string]any{"changes": changes})
}

// waitParam reads the wait query parameter (def when absent).
func (h *handler) waitParam(w http.ResponseWriter, r *http.Request, def time.Duration) (time.Duration, bool) {
	s := r.URL.Query().Get("wait")
	if s == "" {
		return def, true
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d > maxWait {
		h.fail(w, r, fmt.Errorf("%w: wait %q is not a duration from 0 to %v such as \"30s\"", admin.ErrInvalid, s, maxWait))
		return 0, false
	}
	return d, true
}

// maxWait bounds how long a request may wait.
const maxWait = time.Hour

func (h *handler) remove(w http.ResponseWriter, r *http.Request) {
	wait, ok := h.waitParam(w, r, 30*time.Second)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), httpRequestTimeout+wait)
	defer cancel()
	jobName := r.PathValue("job")
	force := false
	if v := r.URL.Query().Get("force"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			h.fail(w, r, fmt.Errorf("%w: force %q is not true or false", admin.ErrInvalid, v))
			return
		}
		force = b
	}
	res, err := h.adm.Remove(ctx, jobName, wait, force)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.done(r, "remove", "job", jobName, "stopped", res.Stopped)
	h.reply(w, http.StatusOK, res)
}

func (h *handler) items(disable bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		text := r.URL.Query().Get("items")
		items, err := layout.ParseItems(text)
		if err != nil || len(items) == 0 {
			h.fail(w, r, fmt.Errorf("%w: items=%q: give the items as a comma-separated list such as items=3,5", admin.ErrInvalid, text))
			return
		}
		ctx, cancel := h.ctx(r)
		defer cancel()
		jobName := r.PathValue("job")
		var now []int
		op := "disable items"
		if disable {
			now, err = h.adm.DisableItems(ctx, jobName, items)
		} else {
			op = "enable items"
			now, err = h.adm.EnableItems(ctx, jobName, items)
		}
		if err != nil {
			h.fail(w, r, err)
			return
		}
		h.done(r, op, "job", jobName, "items", items, "disabled", now)
		h.reply(w, http.StatusOK, map[string]any{"job": jobName, "disabledItems": now})
	}
}

func (h *handler) serverOp(name string, op func(*admin.Admin, context.Context, string, string) ([]admin.Change, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := h.ctx(r)
		defer cancel()
		server, jobName := r.PathValue("server"), r.URL.Query().Get("job")
		changes, err := op(h.adm, ctx, server, jobName)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		h.done(r, name, "server", server, "job", jobName)
		h.reply(w, http.StatusOK, map[string]any{"changes": changes})
	}
}

func (h *handler) instances(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	p, err := h.adm.Placement(ctx)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.reply(w, http.StatusOK, p)
}

func (h *handler) drain(w http.ResponseWriter, r *http.Request) {
	wait, ok := h.waitParam(w, r, 0)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), httpRequestTimeout+wait)
	defer cancel()
	server := r.PathValue("server")
	changed, err := h.adm.Drain(ctx, server)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.done(r, "drain", "server", server, "changed", changed)
	out := map[string]any{"server": server, "changed": changed}
	warning, err := h.adm.DrainWarning(ctx, server)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if warning != "" {
		out["warning"] = warning
	}
	if wait > 0 {
		in, err := h.adm.WaitDrained(ctx, server, wait)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		out["drained"], out["instance"] = true, in
	}
	h.reply(w, http.StatusOK, out)
}

func (h *handler) undrain(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	server := r.PathValue("server")
	changed, err := h.adm.Undrain(ctx, server)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.done(r, "undrain", "server", server, "changed", changed)
	h.reply(w, http.StatusOK, map[string]any{"server": server, "changed": changed})
}

func (h *handler) rebalance(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	n, err := h.adm.Rebalance(ctx)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.done(r, "rebalance", "jobs", n)
	h.reply(w, http.StatusOK, map[string]any{"jobs": n})
}
