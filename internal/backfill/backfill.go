// Package backfill is a job's backfill as the registry keeps it: the
// request (/{job}/backfill), each item's progress (/{job}/backfill/{item}),
// their validation, and the next fire an item runs. A backfill runs a
// job's fires over a past range, each as a run of kind "backfill" on the
// item's owner, at a bounded rate; the instances (package job) run it, the
// operators' tools (internal/admin) start, cancel and resume it.
//
// It may import the standard library; it makes no registry request, and
// its one state, Known, is what an instance knows of a job's progress.
package backfill

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// Limits and defaults of a request.
const (
	// MaxFires bounds the fires of one request's range, counted per item:
	// a backfill runs that many runs of every item.
	MaxFires = 100_000
	// DefaultRate is the fires a second an instance runs when a request
	// names none; MaxRate bounds what one may name.
	DefaultRate = 10.0
	MaxRate     = 1000.0
	// maxValueBytes bounds what the decoders read.
	maxValueBytes = 64 << 10
	// maxMillis is the end of the year 9999, in ms since the epoch.
	maxMillis = 253402300799999
)

// Request states.
const (
	Running   = "running"
	Cancelled = "cancelled"
)

// Sentinel errors: a request is refused with one of them, wrapped in a
// message that names the value.
var (
	// ErrInvalid is a request that does not make sense: no range, a rate
	// out of bounds, a range with no fire, a value that does not decode.
	ErrInvalid = errors.New("backfill: invalid request")
	// ErrFuture is a range that ends after now: a backfill runs fires
	// that have come, the schedule runs the rest.
	ErrFuture = errors.New("backfill: the range ends in the future")
	// ErrTooLarge is a range of more than MaxFires fires.
	ErrTooLarge = errors.New("backfill: the range holds too many fires")
)

// Request is a job's backfill: the fires of its schedule from From to To
// (inclusive, ms since the epoch), run at no more than Rate fires a
// second on each instance. ID tells one request from the next (progress
// names it); State is Running or Cancelled.
type Request struct {
	ID      string  `json:"id"`
	From    int64   `json:"from"`
	To      int64   `json:"to"`
	Rate    float64 `json:"rate"`
	State   string  `json:"state"`
	By      string  `json:"by,omitempty"` // who started it (a token's name, a user)
	Created int64   `json:"created"`
}

// Progress is one item's progress in request ID: the latest fire it ran
// (0: none yet).
type Progress struct {
	ID      string `json:"id"`
	Through int64  `json:"through"`
}

// Schedule is what a backfill reads of a job's schedule (cron.Schedule).
type Schedule interface {
	Next(time.Time) time.Time
}

// FromTime and ToTime are the request's range as times.
func (r Request) FromTime() time.Time { return time.UnixMilli(r.From) }

// ToTime: see FromTime.
func (r Request) ToTime() time.Time { return time.UnixMilli(r.To) }

// Check checks the request's own fields: an ID, a range from 1970 to
// 9999 that does not end after now, a rate in (0, MaxRate], a known
// state.
func (r Request) Check(now time.Time) error {
	switch {
	case r.ID == "" || len(r.ID) > 64:
		return fmt.Errorf("%w: id %q", ErrInvalid, r.ID)
	case r.From <= 0 || r.From > maxMillis || r.To <= 0 || r.To > maxMillis:
		return fmt.Errorf("%w: range %d-%d: from and to must be times from 1970 to 9999", ErrInvalid, r.From, r.To)
	case r.To < r.From:
		return fmt.Errorf("%w: range from %s to %s ends before it begins", ErrInvalid, fmtMillis(r.From), fmtMillis(r.To))
	case r.To > now.UnixMilli():
		return fmt.Errorf("%w: to %s is after now (%s)", ErrFuture, fmtMillis(r.To), now.UTC().Format(time.RFC3339))
	case math.IsNaN(r.Rate) || r.Rate <= 0 || r.Rate > MaxRate:
		return fmt.Errorf("%w: rate %v: must be above 0 and at most %v fires a second", ErrInvalid, r.Rate, MaxRate)
	case r.State != Running && r.State != Cancelled:
		return fmt.Errorf("%w: state %q", ErrInvalid, r.State)
	}
	return nil
}

// Fires counts the fires of sched in the request's range, and refuses a
// range with none or with more than MaxFires.
func (r Request) Fires(sched Schedule) (int, error) {
	n := 0
	to := r.ToTime()
	for t := First(sched, r); !t.IsZero() && !t.After(to); t = sched.Next(t) {
		if n++; n > MaxFires {
			return 0, fmt.Errorf("%w: more than %d fires from %s to %s", ErrTooLarge, MaxFires, fmtMillis(r.From), fmtMillis(r.To))
		}
	}
	if n == 0 {
		return 0, fmt.Errorf("%w: the schedule has no fire from %s to %s", ErrInvalid, fmtMillis(r.From), fmtMillis(r.To))
	}
	return n, nil
}

// First is the request's first fire: the schedule's first at or after
// From (zero: none).
func First(sched Schedule, r Request) time.Time {
	return sched.Next(r.FromTime().Add(-time.Millisecond))
}

// Next is the next fire an item whose progress is p runs in r (the first
// when p is another request's, or none), and false when it has run the
// range through.
func Next(sched Schedule, r Request, p Progress) (time.Time, bool) {
	var t time.Time
	if p.ID == r.ID && p.Through > 0 {
		t = sched.Next(time.UnixMilli(p.Through))
	} else {
		t = First(sched, r)
	}
	if t.IsZero() || t.After(r.ToTime()) {
		return time.Time{}, false
	}
	return t, true
}

// Encode encodes r for its node.
func (r Request) Encode() []byte {
	b, _ := json.Marshal(r) // plain fields: no error
	return b
}

// DecodeRequest decodes a request node; a value that does not decode, or
// whose fields make no sense, is ErrInvalid (now bounds nothing here: a
// request stored earlier may end after a clock that went back).
func DecodeRequest(data []byte) (Request, error) {
	var r Request
	if len(data) > maxValueBytes {
		return Request{}, fmt.Errorf("%w: a request of %d bytes", ErrInvalid, len(data))
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return Request{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := r.Check(time.UnixMilli(maxMillis)); err != nil {
		return Request{}, err
	}
	return r, nil
}

// Encode encodes p for its node.
func (p Progress) Encode() []byte {
	b, _ := json.Marshal(p)
	return b
}

// DecodeProgress decodes an item's progress node.
func DecodeProgress(data []byte) (Progress, error) {
	var p Progress
	if len(data) > maxValueBytes {
		return Progress{}, fmt.Errorf("%w: progress of %d bytes", ErrInvalid, len(data))
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return Progress{}, fmt.Errorf("%w: progress: %v", ErrInvalid, err)
	}
	if p.ID == "" || p.Through < 0 || p.Through > maxMillis {
		return Progress{}, fmt.Errorf("%w: progress %+v", ErrInvalid, p)
	}
	return p, nil
}

func fmtMillis(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }

// Known is one job's backfill progress as an instance knows it: what its
// completions wrote, and what it read of items it gained. Its zero value
// is ready; it owns its lock, a leaf.
type Known struct {
	mu    sync.Mutex
	items map[int]Progress
}

// Ran notes that item ran fire in request id (its completion wrote it).
func (k *Known) Ran(item int, id string, fire time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.items == nil {
		k.items = map[int]Progress{}
	}
	if p, ok := k.items[item]; !ok || p.ID != id || p.Through < fire.UnixMilli() {
		k.items[item] = Progress{ID: id, Through: fire.UnixMilli()}
	}
}

// Read notes what was read of item's progress.
func (k *Known) Read(item int, p Progress) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.items == nil {
		k.items = map[int]Progress{}
	}
	if q, ok := k.items[item]; !ok || q.ID != p.ID || q.Through < p.Through {
		k.items[item] = p
	}
}

// Of returns what is known of item's progress in request id.
func (k *Known) Of(item int, id string) (Progress, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	p, ok := k.items[item]
	return p, ok && p.ID == id
}

// Forget drops everything known (a new request, or items moved away).
func (k *Known) Forget() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.items = nil
}

// ParseTime reads a range's end as the command line and the HTTP API
// take it: an RFC 3339 time, or a date (its midnight UTC).
func ParseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%w: %q is not a time: give RFC 3339 (2026-11-30T14:00:00Z) or a date (2026-11-30)", ErrInvalid, s)
}
