// Package errhandler tells someone when an execution fails: ElasticJob's
// job error handlers.
//
// [Wrap] decorates a [job.Job]: each failed execution — the job returned an
// error, or ran past its Config.Timeout — is reported to a [Handler] as a
// [Failure], with the number of consecutive failures of the job on this
// instance. An execution cut short by a shutdown or a lost item is not a
// failure (the item runs again) and is not reported. The handler runs
// before the execution completes, under its own deadline (Options.Timeout)
// even when the item's context has ended; its error is joined to the
// execution's.
//
// Alerts of the job (job.Config.Alert: a late fire, a job not run) reach
// the same handler as a Failure whose Alert names the kind and whose Err
// wraps job.ErrFireLate or job.ErrNotRun; Item is -1 and Consecutive 0,
// so that Stop never pauses a job for an alert.
//
// The handlers: [Log] (the default), [Ignore], [Stop] (pauses the job on
// this instance after N consecutive failures), [Webhook] (a signed JSON
// POST with bounded retries) and [Email] (SMTP with STARTTLS). Handlers of
// one's own are registered by name with [Register], so YAML files can name
// them.
package errhandler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/internal/jobhook"
	"github.com/shardjob/shardjob/job"
)

// Sentinel errors.
var (
	// ErrInvalidConfig means a handler's settings cannot be used.
	ErrInvalidConfig = errors.New("errhandler: invalid config")
	// ErrUnknownHandler means no handler is registered under a name.
	ErrUnknownHandler = errors.New("errhandler: unknown handler")
	// ErrDuplicate means a name is registered already.
	ErrDuplicate = errors.New("errhandler: handler name registered already")
	// ErrDelivery means a report could not be delivered (webhook, email).
	ErrDelivery = errors.New("errhandler: report not delivered")
)

// DefaultTimeout bounds a handler's call when Options.Timeout is 0.
const DefaultTimeout = 30 * time.Second

// Failure is one failed execution.
type Failure struct {
	// Job, TaskID, ServerID, Item, Kind and FireTime are those of the
	// execution's ShardingContext.
	Job      string    `json:"job"`
	TaskID   string    `json:"taskId"`
	ServerID string    `json:"serverId"`
	Item     int       `json:"item"`
	Kind     job.Kind  `json:"kind"`
	FireTime time.Time `json:"fireTime"`
	// Begin and End bound the execution.
	Begin time.Time `json:"begin"`
	End   time.Time `json:"end"`
	// Err is what failed; Error its text (for JSON).
	Err   error  `json:"-"`
	Error string `json:"error"`
	// TimedOut says the execution ran past the job's timeout.
	TimedOut bool `json:"timedOut"`
	// Consecutive counts the job's failures in a row on this instance,
	// this one included (any success resets it).
	Consecutive int `json:"consecutive"`
	// Alert is set when this is an alert rather than a failed execution:
	// job.EventFireLate ("fire-late") or job.EventNotRun ("not-run").
	Alert job.EventKind `json:"alert,omitempty"`
}

// IsAlert reports whether f is an alert (a late fire, a job not run)
// rather than a failed execution.
func (f Failure) IsAlert() bool { return f.Alert != "" }

// Handler is told of failed executions. Handle is called on the
// execution's goroutine, concurrently for a job's items, with a context
// bounded by Options.Timeout.
type Handler interface {
	Handle(ctx context.Context, f Failure) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, f Failure) error

// Handle calls h.
func (h HandlerFunc) Handle(ctx context.Context, f Failure) error { return h(ctx, f) }

// Options tune Wrap.
type Options struct {
	// Timeout bounds each Handle call. 0 means DefaultTimeout.
	Timeout time.Duration
}

// Wrap returns j reporting its failures to h.
func Wrap(j job.Job, h Handler, o Options) job.Job {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return &wrapped{job: j, h: h, o: o}
}

type wrapped struct {
	job      job.Job
	h        Handler
	o        Options
	failures atomic.Int64 // consecutive failures on this instance
}

// Execute runs the job and reports a failure to the handler.
func (w *wrapped) Execute(ctx context.Context, sc job.ShardingContext) error {
	begin := time.Now()
	err := w.job.Execute(ctx, sc)
	end := time.Now()
	timedOut := errors.Is(context.Cause(ctx), job.ErrExecutionTimeout)
	if ctx.Err() != nil && !timedOut {
		return err // cut short: the item runs again, nothing failed
	}
	if timedOut && err == nil {
		err = context.Cause(ctx)
	}
	if err == nil {
		w.failures.Store(0)
		return nil
	}
	f := Failure{Job: sc.JobName, TaskID: sc.TaskID, ServerID: sc.ServerID, Item: sc.Item, Kind: sc.Kind,
		FireTime: sc.FireTime, Begin: begin, End: end, Err: err, Error: err.Error(), TimedOut: timedOut,
		Consecutive: int(w.failures.Add(1))}
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.o.Timeout)
	defer cancel()
	if herr := w.h.Handle(hctx, f); herr != nil {
		return errors.Join(err, fmt.Errorf("error handler: %w", herr))
	}
	return err
}

// HandleAlert passes the job's alert to the handler as a Failure (see the
// package's documentation); it makes wrapped jobs job.AlertHandlers.
func (w *wrapped) HandleAlert(ctx context.Context, a job.Alert) error {
	f := Failure{Job: a.Job, ServerID: a.Server, Item: -1, FireTime: a.Fire, Begin: a.At, End: a.At,
		Err: a.Err, Alert: a.Kind}
	if a.Err != nil {
		f.Error = a.Err.Error()
	}
	return w.h.Handle(ctx, f)
}

// Log logs each failure at level Error. It is the default handler.
type Log struct {
	// Logger receives the records; nil means slog.Default().
	Logger *slog.Logger
}

// Handle logs f.
func (l Log) Handle(ctx context.Context, f Failure) error {
	log := l.Logger
	if log == nil {
		log = slog.Default()
	}
	if f.IsAlert() {
		log.ErrorContext(ctx, "job alert", "job", f.Job, "alert", f.Alert, "fire", f.FireTime, "err", f.Err)
		return nil
	}
	log.ErrorContext(ctx, "job execution failed", "job", f.Job, "item", f.Item, "task", f.TaskID, "kind", f.Kind,
		"timed_out", f.TimedOut, "consecutive", f.Consecutive, "err", f.Err)
	return nil
}

// Ignore drops every failure (the execution's error is still recorded in
// its completed node).
type Ignore struct{}

// Handle does nothing.
func (Ignore) Handle(context.Context, Failure) error { return nil }

// Pauser pauses a job on this instance. SchedulerPauser returns a
// scheduler's.
type Pauser interface {
	Pause(ctx context.Context, job string) error
}

// SchedulerPauser returns the Pauser that pauses jobs added to s: it sets
// the job's paused flag on s's server (servers/{server}/paused), as
// `shardjob pause SERVER --job NAME` does; the instance stops firing the
// job, its items stay assigned and wait, and the flag survives restarts
// until an operator resumes the server. Pausing a job not added to s is
// an error wrapping job.ErrUnknownJob.
func SchedulerPauser(s *job.Scheduler) Pauser {
	return schedulerPauser{s}
}

type schedulerPauser struct{ s *job.Scheduler }

func (p schedulerPauser) Pause(ctx context.Context, name string) error {
	if p.s == nil {
		return fmt.Errorf("%w: no scheduler to pause job %q with", ErrInvalidConfig, name)
	}
	return jobhook.Pause(p.s, ctx, name)
}

// Stop pauses the job on this instance after After consecutive failures:
// it sets this server's paused flag (which survives restarts; an operator
// resumes with `shardjob resume SERVER --job JOB`), logs an event at level
// Error and calls OnPause. Failures before that go to Then (nil: Log).
type Stop struct {
	// After is the number of consecutive failures that pauses the job; at
	// least 1.
	After int
	// Pauser pauses the job; required.
	Pauser Pauser
	// Then handles every failure first; nil means Log with Logger.
	Then Handler
	// OnPause, if set, is called once the job is paused.
	OnPause func(Failure)
	// Logger receives the pause event; nil means slog.Default().
	Logger *slog.Logger

	mu sync.Mutex
}

// NewStop returns a Stop after validating its settings.
func NewStop(after int, p Pauser, log *slog.Logger) (*Stop, error) {
	if after < 1 {
		return nil, fmt.Errorf("%w: stop: after %d must be at least 1", ErrInvalidConfig, after)
	}
	if p == nil {
		return nil, fmt.Errorf("%w: stop: no scheduler to pause the job with", ErrInvalidConfig)
	}
	return &Stop{After: after, Pauser: p, Logger: log}, nil
}

// Handle passes f on to Then and pauses the job when f.Consecutive
// reaches After.
func (s *Stop) Handle(ctx context.Context, f Failure) error {
	then := s.Then
	if then == nil {
		then = Log{Logger: s.Logger}
	}
	err := then.Handle(ctx, f)
	if f.Consecutive < s.After {
		return err
	}
	if s.After < 1 || s.Pauser == nil {
		return errors.Join(err, fmt.Errorf("%w: stop handler without After or Pauser", ErrInvalidConfig))
	}
	if perr := s.Pauser.Pause(ctx, f.Job); perr != nil {
		return errors.Join(err, fmt.Errorf("pausing job %q: %w", f.Job, perr))
	}
	log := s.Logger
	if log == nil {
		log = slog.Default()
	}
	log.ErrorContext(ctx, "job paused on this instance after consecutive failures; resume it with `shardjob resume`",
		"job", f.Job, "server", f.ServerID, "failures", f.Consecutive, "last_err", f.Err)
	if s.OnPause != nil {
		s.mu.Lock()
		s.OnPause(f)
		s.mu.Unlock()
	}
	return err
}

var registry = struct {
	mu sync.RWMutex
	m  map[string]Handler
}{m: map[string]Handler{}}

// Builtin names the handlers a YAML file can name without registering
// them: log, ignore, stop, webhook, email.
var Builtin = []string{"log", "ignore", "stop", "webhook", "email"}

// Register makes h known by name, for YAML files (errorHandler: name).
// The name must not be empty, a built-in's or registered already
// (ErrDuplicate).
func Register(name string, h Handler) error {
	if name == "" || h == nil {
		return fmt.Errorf("%w: register needs a name and a handler", ErrInvalidConfig)
	}
	for _, b := range Builtin {
		if b == name {
			return fmt.Errorf("%w: %q is a built-in handler", ErrDuplicate, name)
		}
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if _, dup := registry.m[name]; dup {
		return fmt.Errorf("%w: %q", ErrDuplicate, name)
	}
	registry.m[name] = h
	return nil
}

// Lookup returns the handler registered under name (ErrUnknownHandler).
func Lookup(name string) (Handler, error) {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	h, ok := registry.m[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q (built-in: log, ignore, stop, webhook, email; others must be registered with errhandler.Register)", ErrUnknownHandler, name)
	}
	return h, nil
}
