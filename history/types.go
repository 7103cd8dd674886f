package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/shardjob/shardjob/job"
)

// Result is how an execution ended.
type Result string

// Results.
const (
	// ResultSuccess: the job returned nil.
	ResultSuccess Result = "success"
	// ResultFailure: the job returned an error.
	ResultFailure Result = "failure"
	// ResultTimeout: the execution ran past its job's timeout
	// (job.ErrExecutionTimeout) or past a context deadline.
	ResultTimeout Result = "timeout"
)

// ResultOf classifies what an execution returned.
func ResultOf(err error) Result {
	switch {
	case err == nil:
		return ResultSuccess
	case errors.Is(err, job.ErrExecutionTimeout), errors.Is(err, context.DeadlineExceeded):
		return ResultTimeout
	default:
		return ResultFailure
	}
}

func (r Result) valid() bool {
	return r == ResultSuccess || r == ResultFailure || r == ResultTimeout
}

// Execution is one recorded execution of one sharding item on one
// instance.
type Execution struct {
	// ID orders the rows: a later write has a larger ID. Cursors are IDs.
	ID int64 `json:"id"`
	// Job is the job's name; Item the sharding item.
	Job  string `json:"job"`
	Item int    `json:"item"`
	// TaskID identifies the fire across the cluster.
	TaskID string `json:"taskId"`
	// FireTime is the scheduled fire time the execution belongs to.
	FireTime time.Time `json:"fireTime"`
	// Kind is why it ran: fire, misfire, failover or trigger.
	Kind string `json:"kind"`
	// Server is the instance that ran it.
	Server string `json:"server"`
	// Start and End are when the job was called and when it returned.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Result is success, failure or timeout; Error the error's text,
	// folded to one line and bounded (Config.MaxErrorLength).
	Result Result `json:"result"`
	Error  string `json:"error"`
	// Output is the run's output (job.RecordOutput): a JSON value of at
	// most job.MaxOutputSize bytes, or nil when the run recorded none.
	Output json.RawMessage `json:"output,omitempty"`
	// OutputTruncated says the stored output was longer than
	// job.MaxOutputSize (written by something else than a Recorder): Output
	// is then a JSON string of its first bytes.
	OutputTruncated bool `json:"outputTruncated,omitempty"`
	// Attempt is the execution's try of its fire's item run: 1 for the
	// first, 2 for the first retry (job.Config.Retry). Rows written
	// before the column was added read 1.
	Attempt int `json:"attempt"`
}

// Duration is how long the execution ran.
func (e Execution) Duration() time.Duration { return e.End.Sub(e.Start) }

// MarshalJSON encodes e as the HTTP handler and the shardjob command
// serve it: times in UTC, RFC 3339 with nanoseconds, and durationMs, the
// duration in milliseconds (fractional).
func (e Execution) MarshalJSON() ([]byte, error) {
	type plain Execution
	p := plain(e)
	p.FireTime, p.Start, p.End = p.FireTime.UTC(), p.Start.UTC(), p.End.UTC()
	return json.Marshal(struct {
		plain
		DurationMs float64 `json:"durationMs"`
	}{p, float64(e.Duration().Microseconds()) / 1000})
}

// Event is one recorded job.Event: a job status change (paused, resumed,
// disabled, resharded, leader, ...) or a change of the instance's place in
// the namespace (alarm, drain, health). Every kind is recorded as it is
// named by package job.
type Event struct {
	// ID orders the rows, as Execution.ID.
	ID int64 `json:"id"`
	// Job is the job concerned; empty for events of the whole instance.
	Job string `json:"job"`
	// Server is the instance that saw the event.
	Server string `json:"server"`
	// Kind is the job.EventKind.
	Kind string `json:"kind"`
	// Units is the count the event concerns (units held, unplaced, items
	// held after a reshard).
	Units int `json:"units"`
	// Threshold is the alarm threshold, for alarm events.
	Threshold int `json:"threshold,omitempty"`
	// Peer is the other instance concerned, for peer events.
	Peer string `json:"peer,omitempty"`
	// Detail says more (job.Event.Detail).
	Detail string `json:"detail"`
	// Error is the event's error text, one line, bounded.
	Error string `json:"error,omitempty"`
	// At is when the instance noticed.
	At time.Time `json:"at"`
}

// MarshalJSON encodes ev with its time in UTC.
func (ev Event) MarshalJSON() ([]byte, error) {
	type plain Event
	p := plain(ev)
	p.At = p.At.UTC()
	return json.Marshal(p)
}

// Filter selects rows for Query and QueryEvents. Zero fields select
// everything.
type Filter struct {
	// Job, Server and Kind keep the rows with exactly that value.
	Job, Server, Kind string
	// Failed keeps failed and timed-out executions only; for events, the
	// ones that carry an error.
	Failed bool
	// Since keeps rows at or after it, Until rows before it: an
	// execution's start, an event's time.
	Since, Until time.Time
	// Limit is the page's size: default DefaultLimit, at most MaxLimit.
	Limit int
	// Before is a cursor, a previous page's Next: the page starts after
	// it (older rows). Empty: the newest rows.
	Before string
}

// ParseTime reads a point in time as operators give it: a duration
// before now such as "1h" or "90m", or an RFC 3339 time such as
// "2026-05-04T10:00:00Z".
func ParseTime(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("history: %q: a duration before now must not be negative", s)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("history: %q is neither a duration such as 1h nor an RFC 3339 time such as 2026-05-04T10:00:00Z", s)
	}
	return t, nil
}

// Page sizes.
const (
	DefaultLimit = 50
	MaxLimit     = 1000
)

// Page is one page of executions, newest first.
type Page struct {
	Executions []Execution `json:"executions"`
	// Next is the cursor of the following (older) page, for
	// Filter.Before; empty on the last page.
	Next string `json:"next"`
}

// EventPage is one page of events, newest first.
type EventPage struct {
	Events []Event `json:"events"`
	// Next is the cursor of the following (older) page; empty on the last.
	Next string `json:"next"`
}

// Stats counts what a Recorder did since Open. Counters only grow.
// Once the writer is idle, Recorded = Written + Dropped + Buffered.
type Stats struct {
	// Recorded counts executions and events offered to the recorder.
	Recorded int64
	// Written counts rows committed to the database.
	Written int64
	// Dropped counts records lost: the buffer was full, the recorder
	// was closed, or they were still unwritten when Close's deadline
	// came.
	Dropped int64
	// WriteErrors counts failed batch writes (each batch is retried).
	WriteErrors int64
	// Buffered is how many records wait to be written now.
	Buffered int64
	// Pruned counts rows deleted by retention.
	Pruned int64
}
