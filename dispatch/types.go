package dispatch

import (
	"context"
	"crypto/rand"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"time"
	"unicode"
	"unicode/utf8"
)

// Status is where a task is in its life.
type Status string

// The statuses. Waiting and Running are live; the others are final.
const (
	StatusWaiting   Status = "waiting"   // not started yet, or waiting for a retry
	StatusRunning   Status = "running"   // started under a node's lease, not finished yet
	StatusFinished  Status = "finished"  // Finish was called for the running attempt
	StatusFailed    Status = "failed"    // retries spent (or late under LateFail)
	StatusCancelled Status = "cancelled" // Cancel was called
)

func (s Status) valid() bool {
	switch s {
	case StatusWaiting, StatusRunning, StatusFinished, StatusFailed, StatusCancelled:
		return true
	}
	return false
}

// LatePolicy says what happens to a task that could start only after its
// acceptable start.
type LatePolicy string

const (
	// LateRun starts it anyway and records it as late (Task.Late, the
	// Late counter in Stats, a log line). The default.
	LateRun LatePolicy = "run"
	// LateFail fails it instead of starting it; the fail listener runs.
	LateFail LatePolicy = "fail"
)

// Task is one one-off task.
type Task struct {
	UUID       string // assigned by the dispatcher
	Worker     string // the worker (tenant) it belongs to
	ExternalID string // the client's id, unique per worker
	Info       []byte // the client's payload, passed to the start listener as is

	ExpectedStart   time.Time // it may not start before this
	AcceptableStart time.Time // it should start by this; starting later makes it late
	RunAt           time.Time // it may start from this instant: ExpectedStart, or later after a retry's backoff

	Status     Status
	Attempt    int           // starts so far; while running, the running attempt (1 for the first)
	MaxRetries int           // starts allowed after the first one fails or times out
	Timeout    time.Duration // an attempt not finished within this is timed out
	Node       string        // while running: the lease (node) holding it
	Deadline   time.Time     // while running: when the attempt times out
	Late       bool          // the last start was after AcceptableStart
	LastError  string        // why the last attempt ended without a Finish

	CreatedAt, StartedAt, EndedAt time.Time

	// traceCtx is the W3C trace context of the Assign call that created
	// the task, as stored (see assignTrace); "" when there is none.
	traceCtx string
}

// Worker is a tenant: its own cap on running tasks, its late policy and,
// for clients not written in Go, a webhook for start and fail notices.
type Worker struct {
	Name       string
	MaxRunning int        // at most this many of its tasks run at once, cluster-wide; 0 pauses it
	Running    int        // read only: its tasks running now
	LatePolicy LatePolicy // "" means LateRun

	// WebhookURL, if set, receives start and fail notices as signed JSON
	// POSTs (see Webhooks): https, to a public address, unless Config
	// allows otherwise. WebhookSecret signs them: required with a URL, at
	// least MinWebhookSecret bytes.
	WebhookURL    string
	WebhookSecret string
}

// MaxWorkerName is the longest worker name, in bytes.
const MaxWorkerName = 128

// validWorkerName checks a new worker's name: 1 to MaxWorkerName bytes of
// valid UTF-8, every character printable (letters, marks, digits,
// punctuation, symbols, the ASCII space), no '/' (it would read as a path
// in the REST API and the console). NUL, control characters, other
// spaces and invalid bytes are refused, so a name reads back as stored
// and shows as it is.
func validWorkerName(name string) error {
	if name == "" || len(name) > MaxWorkerName {
		return fmt.Errorf("%w: a worker's name must be 1 to %d bytes, got %d", ErrInvalid, MaxWorkerName, len(name))
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("%w: worker name %q is not valid UTF-8", ErrInvalid, name)
	}
	for i, r := range name {
		if r == '/' {
			return fmt.Errorf("%w: worker name %q has a '/' at byte %d", ErrInvalid, name, i)
		}
		if !unicode.IsPrint(r) {
			return fmt.Errorf("%w: worker name %q has the unprintable character %U at byte %d", ErrInvalid, name, r, i)
		}
	}
	return nil
}

// MinWebhookSecret is the shortest webhook secret PutWorker accepts.
const MinWebhookSecret = 16

func (w *Worker) validate(p webhookPolicy) error {
	if err := validWorkerName(w.Name); err != nil {
		return err
	}
	if w.MaxRunning < 0 {
		return fmt.Errorf("%w: worker %q: max running %d is negative", ErrInvalid, w.Name, w.MaxRunning)
	}
	if w.LatePolicy == "" {
		w.LatePolicy = LateRun
	}
	if w.LatePolicy != LateRun && w.LatePolicy != LateFail {
		return fmt.Errorf("%w: worker %q: late policy %q is neither %q nor %q", ErrInvalid, w.Name, w.LatePolicy, LateRun, LateFail)
	}
	if w.WebhookURL != "" {
		if err := p.checkURL(w.WebhookURL); err != nil {
			return fmt.Errorf("%w: worker %q: webhook URL: %w", ErrInvalid, w.Name, err)
		}
		if len(w.WebhookSecret) < MinWebhookSecret {
			return fmt.Errorf("%w: worker %q: a webhook needs a secret of at least %d bytes to sign its notices, got %d", ErrInvalid, w.Name, MinWebhookSecret, len(w.WebhookSecret))
		}
	}
	if len(w.WebhookSecret) > 1024 {
		return fmt.Errorf("%w: worker %q: webhook secret is %d bytes, over 1024", ErrInvalid, w.Name, len(w.WebhookSecret))
	}
	return nil
}

// Global is the dispatcher-wide cap and the count of running tasks.
type Global struct {
	MaxRunning int // at most this many tasks run at once across all workers and nodes
	Running    int
}

// NewTask is one task of an Assignment.
type NewTask struct {
	ExternalID string // required, unique per worker: assigning it again returns the existing task
	Info       []byte // optional payload
}

// Assignment is a batch of tasks for one worker, spread over a window.
// Every task gets ExpectedStart = Start; the i-th of n tasks (from 0) gets
// AcceptableStart = Start + (i+1)·(End−Start)/n: n evenly spaced points of
// the window in the order given, the last one at End.
type Assignment struct {
	Worker     string
	Start, End time.Time     // Start < End
	Tasks      []NewTask     // at least one, at most MaxBatch
	MaxRetries int           // ≥ 0; 0: one attempt only
	Timeout    time.Duration // > 0; 0 means one minute
}

// MaxBatch is the most tasks one Assignment may carry.
const MaxBatch = 10000

func (a *Assignment) validate() error {
	if a.Worker == "" {
		return fmt.Errorf("%w: the assignment names no worker", ErrInvalid)
	}
	if a.Start.IsZero() || a.End.IsZero() {
		return fmt.Errorf("%w: the assignment needs both a start and an end", ErrInvalid)
	}
	if !a.Start.Before(a.End) {
		return fmt.Errorf("%w: end %s is not after start %s", ErrInvalid, a.End.Format(time.RFC3339Nano), a.Start.Format(time.RFC3339Nano))
	}
	if len(a.Tasks) == 0 {
		return fmt.Errorf("%w: the assignment has no tasks", ErrInvalid)
	}
	if len(a.Tasks) > MaxBatch {
		return fmt.Errorf("%w: the assignment has %d tasks, more than %d", ErrInvalid, len(a.Tasks), MaxBatch)
	}
	if a.MaxRetries < 0 {
		return fmt.Errorf("%w: max retries %d is negative", ErrInvalid, a.MaxRetries)
	}
	if a.Timeout < 0 {
		return fmt.Errorf("%w: timeout %s is negative", ErrInvalid, a.Timeout)
	}
	if a.Timeout == 0 {
		a.Timeout = time.Minute
	}
	if a.Timeout < time.Microsecond {
		return fmt.Errorf("%w: timeout %s is under a microsecond", ErrInvalid, a.Timeout)
	}
	seen := make(map[string]int, len(a.Tasks))
	for i, t := range a.Tasks {
		if t.ExternalID == "" || len(t.ExternalID) > 200 {
			return fmt.Errorf("%w: task %d: external id must be 1 to 200 bytes, got %d", ErrInvalid, i, len(t.ExternalID))
		}
		if j, dup := seen[t.ExternalID]; dup {
			return fmt.Errorf("%w: tasks %d and %d share external id %q", ErrInvalid, j, i, t.ExternalID)
		}
		seen[t.ExternalID] = i
	}
	return nil
}

// Spread returns the acceptable starts of n tasks over [start, end]:
// start + (i+1)·(end−start)/n for i = 0..n−1.
func Spread(start, end time.Time, n int) []time.Time {
	out := make([]time.Time, n)
	span := end.Sub(start)
	for i := range out {
		out[i] = start.Add(time.Duration(float64(span) * float64(i+1) / float64(n))).Truncate(time.Microsecond)
	}
	if n > 0 {
		out[n-1] = end
	}
	return out
}

// Filter selects tasks for Tasks. Zero fields match everything.
type Filter struct {
	Worker     string
	Status     Status
	ExternalID string
	After      string // only uuids after this one (paging: pass the last uuid seen)
	Limit      int    // 1..1000; 0 means 100
	// MaxBytes bounds what one call reads: once the infos of the tasks
	// read reach MaxBytes in total, no more are read (the task that
	// reaches it is included, so a page holds at least one task). 0 means
	// no bound but Limit.
	MaxBytes int
}

func (f *Filter) validate() error {
	if f.Status != "" && !f.Status.valid() {
		return fmt.Errorf("%w: unknown status %q", ErrInvalid, f.Status)
	}
	if f.Limit < 0 || f.Limit > 1000 {
		return fmt.Errorf("%w: limit %d is not within 0..1000", ErrInvalid, f.Limit)
	}
	if f.Limit == 0 {
		f.Limit = 100
	}
	if f.MaxBytes < 0 {
		return fmt.Errorf("%w: max bytes %d is negative", ErrInvalid, f.MaxBytes)
	}
	return nil
}

// Backoff is the delay before a retry: exponential with jitter.
type Backoff struct {
	Base   time.Duration // the delay after the first failed attempt; default 1s
	Max    time.Duration // the longest delay; default 5m
	Jitter float64       // 0..1: the delay is scaled by a random factor in [1−Jitter, 1+Jitter]; default 0.2
}

func (b *Backoff) setDefaults() error {
	if b.Base < 0 || b.Max < 0 || b.Jitter < 0 || b.Jitter > 1 {
		return fmt.Errorf("%w: backoff %+v: durations must be ≥ 0 and jitter within 0..1", ErrInvalid, *b)
	}
	if b.Base == 0 {
		b.Base = time.Second
	}
	if b.Max == 0 {
		b.Max = 5 * time.Minute
	}
	if b.Jitter == 0 {
		b.Jitter = 0.2
	}
	if b.Max < b.Base {
		return fmt.Errorf("%w: backoff max %s is below its base %s", ErrInvalid, b.Max, b.Base)
	}
	return nil
}

// Delay is the wait before the retry that follows failed attempt number
// attempt (1 for the first): Base·2^(attempt−1), at most Max, jittered.
func (b Backoff) Delay(attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	d := float64(b.Base) * math.Pow(2, float64(attempt-1))
	if d > float64(b.Max) {
		d = float64(b.Max)
	}
	d *= 1 - b.Jitter + 2*b.Jitter*mrand.Float64()
	return time.Duration(d)
}

// StartFunc is the start listener: the task's work begins. ctx ends when
// the attempt times out, the task is cancelled from this node, the node
// loses its lease or the dispatcher stops. A nil return means the work
// is under way: the client calls Finish when it is done (or, with
// Config.FinishOnReturn, the return itself finishes it). An error ends
// the attempt: the task is retried after a backoff, or fails for good.
type StartFunc func(ctx context.Context, t Task) error

// TaskFunc is a notice about a task: a fail or a timeout. ctx ends when
// the dispatcher closes, or after 30 seconds.
type TaskFunc func(ctx context.Context, t Task)

// Clock tells the time. Tests inject one to move time without sleeping.
type Clock interface{ Now() time.Time }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never returns an error
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
