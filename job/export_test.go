package job

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/placement"
	"github.com/shardjob/shardjob/job/internal/process"
	"github.com/shardjob/shardjob/job/internal/reshard"
	"github.com/shardjob/shardjob/regcenter"
)

// WithProcessForTest makes the scheduler claim its server id as the process
// on host with pid (a token of its own drawn for it), so that a test can
// stand one scheduler for another process, dead or alive.
func WithProcessForTest(host string, pid int) Option {
	return func(o *options) error {
		o.process = &process.Holder{Host: host, PID: pid, Process: process.NewToken(), Token: process.NewToken()}
		return nil
	}
}

// WithClockForTest replaces the wall clock the scheduler fires by and
// compares with the registry's (default time.Now), so that a test can
// simulate a skewed host clock: WithClock with a clock reading now on
// real timers, which MaxTimeDiff checks too.
func WithClockForTest(now func() time.Time) Option {
	return func(o *options) error {
		if now == nil {
			return fmt.Errorf("%w: nil clock", ErrInvalidOption)
		}
		if err := WithClock(clockOf(now))(o); err != nil {
			return err
		}
		o.hostNow = now
		return nil
	}
}

// WithJournalSweepForTest makes the scheduler fold the completion
// journals not written for age, looking every sweep.
func WithJournalSweepForTest(age, sweep time.Duration) Option {
	return func(o *options) error {
		o.journalOrphanAge, o.journalSweep = age, sweep
		return nil
	}
}

// ReviewBooks runs a scheduler's namespace-wide pass over the load table
// (reviewBooks) once, on rc.
func ReviewBooks(ctx context.Context, rc regcenter.Center) error {
	return placement.ReviewBooks(ctx, rc, placement.NewPlacer(ctx, rc, slog.Default()), reshard.RepairRequest)
}

// LateAttemptsForTest counts the late fires s tried to raise, whether its
// creation of the fire's node won or found it made.
func LateAttemptsForTest(s *Scheduler) int64 { return s.alert.book.Attempts() }

// JobFileForTest reads the jobs of a YAML job file as package jobfile
// does (set by a test of package job_test, which may import jobfile); nil
// when none is set. The config property test reads its job file with it.
var JobFileForTest func(file []byte) ([]Config, error)

// HeldWrite is a real registry whose first transaction writing a node
// whose path ends in a given suffix, once Armed, waits until Release: a
// member slow to commit it (a CPU hog beside it; a new fleet's first
// records at once).
type HeldWrite struct {
	regcenter.Center
	Armed   atomic.Bool
	suffix  string
	held    chan struct{}
	release chan struct{}
	once    sync.Once
	failed  error // set before release closes
}

// NewHeldRecordWrite wraps rc, holding a write of a completed record.
func NewHeldRecordWrite(rc regcenter.Center) *HeldWrite {
	return NewHeldWrite(rc, "/"+layout.Completed)
}

// NewHeldWrite wraps rc, holding a write of a node whose path ends in
// suffix.
func NewHeldWrite(rc regcenter.Center, suffix string) *HeldWrite {
	return &HeldWrite{Center: rc, suffix: suffix, held: make(chan struct{}), release: make(chan struct{})}
}

// Held is closed as the write is held.
func (h *HeldWrite) Held() <-chan struct{} { return h.held }

// Release lets the write go (at most once).
func (h *HeldWrite) Release() { h.once.Do(func() { close(h.release) }) }

// Fail ends the held write with err, unsent: a transaction cut (a lost
// connection) after it was held. A Release after it changes nothing.
func (h *HeldWrite) Fail(err error) {
	h.once.Do(func() {
		h.failed = err
		close(h.release)
	})
}

// Multi holds the first transaction writing a node whose path ends in
// h.suffix, once armed.
func (h *HeldWrite) Multi(ctx context.Context, ops ...regcenter.Op) error {
	for _, op := range ops {
		if strings.HasSuffix(WrittenPath(op), h.suffix) && h.Armed.CompareAndSwap(true, false) {
			close(h.held)
			select {
			case <-h.release:
				if h.failed != nil {
					return h.failed
				}
			case <-ctx.Done():
				return ctx.Err()
			}
			break
		}
	}
	return h.Center.Multi(ctx, ops...)
}

// WrittenPath is the node op writes (a set or a create), or "".
func WrittenPath(op regcenter.Op) string {
	switch o := op.(type) {
	case regcenter.SetOp:
		return o.Path
	case regcenter.CreateOp:
		return o.Path
	}
	return ""
}
