package dispatch

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/shardjob/shardjob/internal/sqldb"
	"github.com/shardjob/shardjob/internal/startstop"
	"github.com/shardjob/shardjob/regcenter"
)

// Config configures a Dispatcher. The zero value of each field means its
// stated default; Open validates the whole.
type Config struct {
	// Driver is "sqlite" (default: embedded, one process) or "postgres"
	// (several nodes sharing one database). The program links the
	// database by importing package store/sqlite or store/postgres; Open
	// refuses a Driver whose package it did not import.
	Driver string
	// DSN is, for sqlite, a file path (":memory:" for a private in-memory
	// database); for postgres, a pgx connection string
	// ("postgres://user@host:port/db?sslmode=disable"). Required.
	DSN string

	// OnStart is the start listener. Without it the dispatcher is a
	// client only: it assigns, finishes, cancels and reads, but Start
	// refuses to run.
	OnStart StartFunc
	// OnFail runs once for a task that failed for good: retries spent, or
	// late under LateFail. Optional.
	OnFail TaskFunc
	// OnTimeout runs for each attempt that timed out, on the node that
	// noticed, before the retry (or OnFail). Optional.
	OnTimeout TaskFunc
	// FinishOnReturn makes a nil return of OnStart finish the task, for
	// work done inside the listener. Default false: the client calls Finish.
	FinishOnReturn bool

	// NodeID names this node in leases and logs; a random suffix is added
	// per registration, so a restarted node never reuses a lapsed lease.
	// Default: the host name and process id.
	NodeID string
	// LeaseTTL is how long a node's lease lasts without renewal; when it
	// lapses, the node's running tasks are freed and retried. A node that
	// could not renew within LeaseTTL − SweepInterval cancels its handlers
	// and claims nothing until it renews. Default 10s; at least 3×SweepInterval.
	LeaseTTL time.Duration
	// SweepInterval is how often a node renews its lease, times out
	// overdue tasks and reaps lapsed leases. Default 500ms.
	SweepInterval time.Duration
	// MaxWait is the longest the fetcher sleeps with no signal (a new
	// task, a freed slot, the next expected start): a safety net, not the
	// way tasks are found. Default 1s.
	MaxWait time.Duration
	// BatchSize is the most tasks one claim transaction starts. Default 1000, at most 1000.
	BatchSize int
	// MaxOpenConns bounds the connection pool. Default 1 for sqlite (its
	// writes are serialized anyway), 16 for postgres.
	MaxOpenConns int
	// Backoff is the retry delay policy; see Backoff for its defaults.
	Backoff Backoff
	// Clock tells the time; default the system clock. All times the
	// dispatcher stores come from it, so nodes' clocks should agree.
	Clock Clock
	// Regcenter, if set, ties this node's leases to its registry session
	// (ZooKeeper or etcd: any regcenter.Center):
	// each lease also has an ephemeral node under /dispatch/nodes in the
	// regcenter's namespace. When this node's session ends its handlers
	// are cancelled at once; when another node's session ends, its tasks
	// are freed at once instead of after LeaseTTL (which still applies).
	// Optional; every node sharing a store should set it or none.
	Regcenter regcenter.Center
	// MaxWorkers is the most workers the store may hold: a PutWorker of a
	// new name past it fails with ErrTooManyWorkers, so the per-worker
	// answers and metric series stay bounded. Default 1000.
	MaxWorkers int
	// MaxAge is how long an ended task (finished, failed or cancelled) is
	// kept after it ended; older ones are deleted by the retention. A
	// waiting or running task is never deleted, however old. Once a task
	// is deleted, Task and Finish answer ErrUnknownTask for it, and an
	// Assign with its external id adds a new task. Default DefaultMaxAge
	// (7 days), as the execution history keeps its rows.
	MaxAge time.Duration
	// MaxRows is how many ended tasks are kept at most: the most recently
	// ended ones. Default DefaultMaxRows (1,000,000).
	MaxRows int64
	// RetentionInterval is how often a started node deletes the ended
	// tasks past MaxAge or MaxRows; a pass that leaves more to delete is
	// followed by the next one after SweepInterval. Default
	// DefaultRetentionInterval (1 min).
	RetentionInterval time.Duration
	// RetentionBatch is how many tasks one DELETE removes at most (one
	// short transaction that locks those rows only); a pass runs at most
	// 20 of them per rule (age, count). Default DefaultRetentionBatch
	// (1,000), at most MaxRetentionBatch.
	RetentionBatch int
	// AllowInsecureWebhooks lets a worker's WebhookURL be plain http.
	// Default false: https only, so notices and their signatures are not
	// readable on the way.
	AllowInsecureWebhooks bool
	// AllowPrivateWebhooks lets a webhook go to loopback, private (RFC
	// 1918, fc00::/7), link-local (169.254.0.0/16, fe80::/10), carrier-grade
	// NAT, multicast and unspecified addresses, and to localhost. Default
	// false: such a URL is refused by PutWorker, and a name that resolves
	// to such an address is refused when Webhooks dials it, so a worker
	// cannot aim the dispatcher at its own network (a metadata service, an
	// admin port).
	AllowPrivateWebhooks bool
	// Logger receives events (late starts, timeouts, lease changes).
	// Default slog.Default().
	Logger *slog.Logger
	// TracerProvider, if set, turns tracing on: every dispatch (one
	// attempt handed to its start listener on this node) is a span named
	// DispatchSpanName, from the claim that started the attempt to the
	// return of OnStart, with the attributes AttrTask, AttrWorker,
	// AttrAttempt, AttrNode and AttrLate. A start listener's error (or
	// panic) is recorded on the span and its status set to Error; the
	// others' to Ok. The span has no parent: each dispatch starts a trace.
	// The context OnStart gets carries the span, so that spans it starts
	// are its children, and Webhooks sends it on as the traceparent and
	// tracestate headers.
	//
	// Assign stores the span its context carries (its W3C trace context)
	// on every task it adds, and each dispatch's span has a link to it,
	// with AttrLink set to LinkAssign: a link, not a parent, so a task
	// assigned in a request's trace is found from it without the request
	// and its dispatches becoming one trace. A task assigned without a
	// span, or by a dispatcher without a provider, has none stored and its
	// spans no link; so has one whose stored value is not a trace context.
	//
	// The timeout and fail notices are spans too: TimeoutSpanName around
	// each call of OnTimeout, FailSpanName around each call of OnFail, with
	// the dispatch span's attributes (AttrNode: the lease that held the
	// attempt, left out for a task failed late without a start) and link.
	// Their listener's context carries them, so Webhooks sends them as the
	// notices' traceparent and tracestate headers.
	//
	// Default nil: off, and then the start path and the notices make no
	// span and allocate nothing for tracing, and Assign stores nothing and
	// formats nothing; the global provider (otel.GetTracerProvider) is
	// never used.
	TracerProvider trace.TracerProvider
}

func (c *Config) validate() error {
	switch c.Driver {
	case "":
		c.Driver = "sqlite"
	case "sqlite", "postgres":
	default:
		return fmt.Errorf("%w: driver %q is neither sqlite nor postgres", ErrInvalid, c.Driver)
	}
	if c.DSN == "" {
		return fmt.Errorf("%w: no DSN (a file path for sqlite, a connection string for postgres)", ErrInvalid)
	}
	if c.NodeID == "" {
		h, err := os.Hostname()
		if err != nil {
			h = "node"
		}
		c.NodeID = fmt.Sprintf("%s-%d", h, os.Getpid())
	}
	if c.SweepInterval < 0 || c.LeaseTTL < 0 || c.MaxWait < 0 || c.BatchSize < 0 || c.MaxOpenConns < 0 || c.MaxWorkers < 0 {
		return fmt.Errorf("%w: SweepInterval, LeaseTTL, MaxWait, BatchSize, MaxOpenConns and MaxWorkers must not be negative", ErrInvalid)
	}
	if c.MaxWorkers == 0 {
		c.MaxWorkers = DefaultMaxWorkers
	}
	if c.SweepInterval == 0 {
		c.SweepInterval = 500 * time.Millisecond
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = 10 * time.Second
	}
	if c.LeaseTTL < 3*c.SweepInterval {
		return fmt.Errorf("%w: lease TTL %s is under three sweep intervals (%s)", ErrInvalid, c.LeaseTTL, 3*c.SweepInterval)
	}
	if c.MaxWait == 0 {
		c.MaxWait = time.Second
	}
	if c.BatchSize == 0 {
		c.BatchSize = 1000
	}
	if c.BatchSize > 1000 {
		return fmt.Errorf("%w: batch size %d is over 1000", ErrInvalid, c.BatchSize)
	}
	if c.MaxOpenConns == 0 {
		c.MaxOpenConns = 16
		if c.Driver == "sqlite" {
			c.MaxOpenConns = 1
		}
	}
	if err := c.retentionDefaults(); err != nil {
		return err
	}
	if err := c.Backoff.setDefaults(); err != nil {
		return err
	}
	if c.Clock == nil {
		c.Clock = systemClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// DefaultMaxWorkers is Config.MaxWorkers when it is 0.
const DefaultMaxWorkers = 1000

// Stats counts what a dispatcher did since Open.
type Stats struct {
	Started    int64 // attempts started here
	Late       int64 // of those, started after their acceptable start
	LateFailed int64 // failed instead of started, late under LateFail
	Finished   int64 // Finish calls that succeeded here
	TimedOut   int64 // attempts this node timed out
	Retried    int64 // attempts ended here (error, timeout, lost lease) with a retry to come
	Failed     int64 // tasks this node failed for good
	Reaped     int64 // tasks freed here from lapsed leases
	Stale      int64 // results rejected because the attempt no longer held the task
	LeaseLost  int64 // times this node found its own lease gone
	Pruned     int64 // ended tasks deleted here by the retention (MaxAge, MaxRows)
}

type counters struct {
	started, late, lateFailed, finished, timedOut, retried, failed, reaped, stale, leaseLost, pruned atomic.Int64
}

// attemptRun is a handler running on this node.
type attemptRun struct {
	attempt int
	cancel  context.CancelFunc
}

// Dispatcher assigns one-off tasks and, once started, runs them on this
// node within the global and per-worker caps, in order of acceptable start.
// Its methods are safe for concurrent use.
type Dispatcher struct {
	cfg   Config
	st    *store
	log   *slog.Logger
	clock Clock
	wake  chan struct{}
	stats counters

	// tracer makes the dispatch spans; nil when tracing is off.
	tracer trace.Tracer

	// life ends in Close, after every goroutine is done; operations that
	// must complete even while stopping (recording a handler's result)
	// run under it with a timeout.
	life       context.Context
	endLife    context.CancelFunc
	listenConn func(context.Context) error // postgres: LISTEN loop

	mu          sync.Mutex
	started     bool
	closed      bool
	node        string    // current lease id
	renewedAt   time.Time // last successful lease renewal (clock time)
	running     map[string]*attemptRun
	finishing   map[string]int // Finish calls in flight here, by task
	listenAlive atomic.Bool

	// Made by Start: loops owns the fetcher, the sweeper and the other
	// loops; handlers owns the handler-side goroutines (start listeners,
	// notices), and its context is every handler's.
	loops, handlers *startstop.Group

	finishQ   chan finishCall
	finishers *startstop.Group
}

// finishCall is one Finish waiting for its batch.
type finishCall struct {
	req  finishReq
	done chan error
}

// finishBatchMax is the most finishes one transaction records.
const finishBatchMax = 500

// finisher records finishes in batches: it takes what is queued (up to
// finishBatchMax) and records it in one transaction, so many handlers
// finishing at once cost one round of statements, not one each.
func (d *Dispatcher) finisher(ctx context.Context) {
	for {
		var first finishCall
		select {
		case first = <-d.finishQ:
		case <-ctx.Done():
			return
		}
		batch := []finishCall{first}
	drain:
		for len(batch) < finishBatchMax {
			select {
			case c := <-d.finishQ:
				batch = append(batch, c)
			default:
				break drain
			}
		}
		reqs := make([]finishReq, len(batch))
		for i, c := range batch {
			reqs[i] = c.req
		}
		ctx, cancel := d.opCtx()
		errs, err := d.st.finishBatch(ctx, reqs, d.clock.Now())
		cancel()
		for i, c := range batch {
			if err != nil {
				c.done <- fmt.Errorf("dispatch: finish %s: %w", c.req.uuid, err)
			} else {
				c.done <- errs[i]
			}
		}
	}
}

// stopFinishers ends the finishers; finishes queued after it get ErrClosed.
// It waits without a deadline (a finisher's batch is bounded by
// opTimeout), and a Wait on a context that never ends returns nil.
func (d *Dispatcher) stopFinishers() error {
	return d.finishers.Stop(context.Background())
}

// opTimeout bounds one store operation done on the dispatcher's own behalf.
const opTimeout = 30 * time.Second

// Open connects to the store and applies its embedded migrations. The
// dispatcher assigns and reads at once; Start runs tasks.
func Open(ctx context.Context, cfg Config) (*Dispatcher, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	drv, err := sqldb.Lookup(cfg.Driver)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	st := &store{d: sqliteDialect, drv: drv}
	dsn := cfg.DSN
	if cfg.Driver == "postgres" {
		st.d = postgresDialect
	} else {
		dsn = sqldb.SQLiteURI(dsn, "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=cache_size(-65536)&_pragma=foreign_keys(1)&_txlock=immediate")
	}
	db, err := sql.Open(drv.SQLDriver, dsn)
	if err != nil {
		return nil, fmt.Errorf("dispatch: open %s: %w", cfg.Driver, err)
	}
	db.SetMaxOpenConns(cfg.MaxOpenConns)
	db.SetMaxIdleConns(cfg.MaxOpenConns)
	if cfg.Driver == "sqlite" {
		// A connection's in-memory database dies with it.
		db.SetConnMaxLifetime(0)
		db.SetConnMaxIdleTime(0)
	}
	st.db = db
	if err := db.PingContext(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("dispatch: connect to %s: %w", cfg.Driver, err), db.Close())
	}
	if err := st.migrate(ctx); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	// The dispatcher's own contexts keep Open's values but not its span:
	// a span the caller had open while opening is not the parent of the
	// attempts' work, nor sent with their notices.
	life, end := context.WithCancel(trace.ContextWithSpanContext(context.WithoutCancel(ctx), trace.SpanContext{}))
	d := &Dispatcher{
		cfg: cfg, st: st, log: cfg.Logger.With("node", cfg.NodeID), clock: cfg.Clock, tracer: newTracer(cfg.TracerProvider),
		wake: make(chan struct{}, 1), life: life, endLife: end,
		running: map[string]*attemptRun{}, finishing: map[string]int{},
	}
	if cfg.Driver == "postgres" {
		d.listenConn = d.listen
	}
	d.finishQ = make(chan finishCall, 4*finishBatchMax)
	d.finishers = startstop.New(life)
	finishers := 1
	if cfg.Driver == "postgres" {
		finishers = 2
	}
	for range finishers {
		if err := d.finishers.Go(d.finisher); err != nil { // a new group refuses nothing
			err = errors.Join(err, d.stopFinishers(), db.Close())
			end()
			return nil, err
		}
	}
	return d, nil
}

// Stats returns the counters.
func (d *Dispatcher) Stats() Stats {
	c := &d.stats
	return Stats{Started: c.started.Load(), Late: c.late.Load(), LateFailed: c.lateFailed.Load(), Finished: c.finished.Load(),
		TimedOut: c.timedOut.Load(), Retried: c.retried.Load(), Failed: c.failed.Load(), Reaped: c.reaped.Load(),
		Stale: c.stale.Load(), LeaseLost: c.leaseLost.Load(), Pruned: c.pruned.Load()}
}

// DB is the database handle, for callers that read the tables directly.
func (d *Dispatcher) DB() *sql.DB { return d.st.db }

func (d *Dispatcher) checkOpen() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	return nil
}

// SetGlobalMax sets the most tasks that run at once across all workers and
// nodes. Lowering it below the running count starts nothing new until
// enough finish; nothing running is stopped.
func (d *Dispatcher) SetGlobalMax(ctx context.Context, n int) error {
	if n < 0 {
		return fmt.Errorf("%w: global max running %d is negative", ErrInvalid, n)
	}
	if err := d.checkOpen(); err != nil {
		return err
	}
	if err := d.st.setGlobalMax(ctx, n); err != nil {
		return fmt.Errorf("dispatch: set global max: %w", err)
	}
	d.kick()
	d.notifyNodes(ctx)
	return nil
}

// Global returns the global cap and the running count.
func (d *Dispatcher) Global(ctx context.Context) (Global, error) {
	if err := d.checkOpen(); err != nil {
		return Global{}, err
	}
	return d.st.global(ctx)
}

// PutWorker creates a worker or updates its cap, late policy and webhook.
// Its running count is kept. A name is 1 to MaxWorkerName bytes of
// printable UTF-8 without '/'; a new name past Config.MaxWorkers fails with
// ErrTooManyWorkers. A webhook URL must be https and name no
// loopback, private or link-local address unless Config allows it
// (ErrInvalid and ErrWebhookAddress).
func (d *Dispatcher) PutWorker(ctx context.Context, w Worker) error {
	if err := w.validate(d.webhookPolicy()); err != nil {
		return err
	}
	if err := d.checkOpen(); err != nil {
		return err
	}
	if err := d.st.putWorker(ctx, w, d.cfg.MaxWorkers); err != nil {
		if errors.Is(err, ErrTooManyWorkers) {
			return err
		}
		return fmt.Errorf("dispatch: put worker %q: %w", w.Name, err)
	}
	d.kick()
	d.notifyNodes(ctx)
	return nil
}

// webhookPolicy is where this dispatcher's Webhooks may send notices.
func (d *Dispatcher) webhookPolicy() webhookPolicy {
	return webhookPolicy{insecure: d.cfg.AllowInsecureWebhooks, private: d.cfg.AllowPrivateWebhooks}
}

// Worker returns one worker; ErrUnknownWorker if there is none by that name.
func (d *Dispatcher) Worker(ctx context.Context, name string) (Worker, error) {
	if err := d.checkOpen(); err != nil {
		return Worker{}, err
	}
	return d.st.worker(ctx, name)
}

// Workers returns every worker, by name.
func (d *Dispatcher) Workers(ctx context.Context) ([]Worker, error) {
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	return d.st.workers(ctx)
}

// Assign adds a batch of tasks to a worker, spread over [a.Start, a.End]
// (see Assignment). It returns one task per NewTask, in order; a task whose
// external id the worker already has is returned as it is, not added again.
// The batch is one transaction: on error nothing was added. With
// Config.TracerProvider set, the span ctx carries is stored on the tasks
// added, and their dispatches' spans link to it.
func (d *Dispatcher) Assign(ctx context.Context, a Assignment) ([]Task, error) {
	if err := a.validate(); err != nil {
		return nil, err
	}
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	now := d.clock.Now()
	traceCtx := d.assignTrace(ctx)
	acc := Spread(a.Start.Truncate(time.Microsecond), a.End.Truncate(time.Microsecond), len(a.Tasks))
	ts := make([]Task, len(a.Tasks))
	for i, nt := range a.Tasks {
		ts[i] = Task{
			UUID: newUUID(), Worker: a.Worker, ExternalID: nt.ExternalID, Info: nt.Info,
			ExpectedStart: a.Start.Truncate(time.Microsecond).UTC(), AcceptableStart: acc[i].UTC(),
			MaxRetries: a.MaxRetries, Timeout: a.Timeout.Truncate(time.Microsecond), CreatedAt: now.Truncate(time.Microsecond).UTC(),
			traceCtx: traceCtx,
		}
	}
	out, err := d.st.assign(ctx, ts, d.st.d == postgresDialect)
	if err != nil {
		if errors.Is(err, ErrUnknownWorker) {
			return nil, err
		}
		return nil, fmt.Errorf("dispatch: assign %d tasks to %q: %w", len(ts), a.Worker, err)
	}
	d.kick()
	return out, nil
}

// Finish records that the running task's work is done and frees its slots.
// It fails with ErrUnknownTask, ErrAlreadyFinished, or ErrNotRunning. It
// names no attempt, so a retry after a lost answer cannot be told from a
// second finisher and gets ErrAlreadyFinished; FinishAttempt can.
func (d *Dispatcher) Finish(ctx context.Context, uuid string) error {
	return d.FinishAttempt(ctx, uuid, 0)
}

// FinishAttempt is Finish for one attempt (Task.Attempt as the start
// listener saw it): if that attempt no longer holds the task — it timed
// out, or its node's lease lapsed and the task was freed — it fails with
// ErrStaleLease and changes nothing. attempt 0 means whichever runs.
//
// It is idempotent: if that attempt's finish was recorded already (an
// earlier call committed but its answer was lost), it returns nil and
// changes nothing — no second count, no slot freed twice.
func (d *Dispatcher) FinishAttempt(ctx context.Context, uuid string, attempt int) error {
	if uuid == "" {
		return fmt.Errorf("%w: no task uuid", ErrInvalid)
	}
	if attempt < 0 {
		return fmt.Errorf("%w: attempt %d is negative", ErrInvalid, attempt)
	}
	if err := d.checkOpen(); err != nil {
		return err
	}
	call := finishCall{req: finishReq{uuid: uuid, attempt: attempt}, done: make(chan error, 1)}
	// While the finish is in flight, the sweeper leaves the attempt's
	// context alone: it would see the task finished in the store before
	// this call has its answer, and a handler finishing with that context
	// would get a cancellation instead of its result.
	d.mu.Lock()
	d.finishing[uuid]++
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		if d.finishing[uuid]--; d.finishing[uuid] <= 0 {
			delete(d.finishing, uuid)
		}
		d.mu.Unlock()
	}()
	select {
	case d.finishQ <- call:
	case <-ctx.Done():
		return ctx.Err()
	case <-d.life.Done():
		return ErrClosed
	}
	var err error
	select {
	case err = <-call.done:
	case <-ctx.Done():
		select {
		case err = <-call.done: // the answer came with the cancellation
		default:
			return fmt.Errorf("dispatch: finish %s: %w (the finish may still be recorded)", uuid, ctx.Err())
		}
	}
	if errors.Is(err, errFinishedBefore) {
		return nil // this attempt's earlier finish committed; everything it does was done then
	}
	if err != nil {
		if errors.Is(err, ErrStaleLease) {
			d.stats.stale.Add(1)
		}
		return err
	}
	d.stats.finished.Add(1)
	d.cancelLocal(uuid, attempt) // the attempt is over: its context ends
	d.kick()
	if !d.isStarted() {
		// A client-only dispatcher frees a slot that another node's
		// fetcher should fill now, not at its next safety poll.
		d.notifyNodes(ctx)
	}
	return nil
}

// notifyNodes wakes the fetchers of other nodes (PostgreSQL NOTIFY) after a
// change that may let tasks start: a raised cap, a freed slot. A failure
// only delays them until their next MaxWait poll, so it is logged.
func (d *Dispatcher) notifyNodes(ctx context.Context) {
	if d.st.d != postgresDialect {
		return
	}
	if _, err := d.st.db.ExecContext(ctx, `SELECT pg_notify('`+notifyChannel+`', '')`); err != nil {
		d.log.Warn("dispatch: notify other nodes", "err", err)
	}
}

// Cancel ends a waiting or running task for good; a running one's slots
// are freed and, if it runs on this node, its handler's context is
// cancelled. A task that already ended gives ErrFinal.
func (d *Dispatcher) Cancel(ctx context.Context, uuid string) error {
	if uuid == "" {
		return fmt.Errorf("%w: no task uuid", ErrInvalid)
	}
	if err := d.checkOpen(); err != nil {
		return err
	}
	t, err := d.st.cancel(ctx, uuid, d.clock.Now())
	if err != nil {
		return err
	}
	d.cancelLocal(t.UUID, 0)
	d.kick()
	return nil
}

// Task returns one task; ErrUnknownTask if there is none by that uuid.
func (d *Dispatcher) Task(ctx context.Context, uuid string) (Task, error) {
	if err := d.checkOpen(); err != nil {
		return Task{}, err
	}
	return d.st.task(ctx, uuid)
}

// Tasks lists tasks matching f, by uuid.
func (d *Dispatcher) Tasks(ctx context.Context, f Filter) ([]Task, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	return d.st.tasks(ctx, f)
}

func (d *Dispatcher) isStarted() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.started
}

// kick wakes the fetcher; a wake already pending is enough.
func (d *Dispatcher) kick() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Node is the id of this node's current lease ("" before Start).
func (d *Dispatcher) Node() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.node
}
