package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
)

// WithProcessForTest makes the scheduler claim its server id as the process
// on host with pid (a token of its own drawn for it), so that a test can
// stand one scheduler for another process, dead or alive.
func WithProcessForTest(host string, pid int) Option {
	return func(o *options) error {
		o.process = &holder{Host: host, PID: pid, Process: newToken(), Token: newToken()}
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
	return reviewBooks(ctx, rc, newPlacer(ctx, rc, slog.Default()))
}

// StoredKinds are the node kinds DecodeStoredForTest reads: the
// placement's values (the records and marks are job/internal/stored's,
// fuzzed there).
var StoredKinds = []string{"table", "instance"}

// DecodeStoredForTest decodes data as the scheduler reads a stored value
// of kind (one of StoredKinds) and checks what it got: it reports whether
// the value decoded, and a problem when the decoder's answer makes no
// sense (an error that is not the kind's sentinel, an instance entry out
// of range, a table with negative units or that does not survive its own
// encoding).
func DecodeStoredForTest(kind string, data []byte) (decoded bool, problem error) {
	var err error
	switch kind {
	case "instance":
		var info instanceInfo
		if info, err = decodeInstance(data); err == nil && info.FaultTolerance < 1 {
			return true, fmt.Errorf("instance entry %+v", info)
		}
	case "table":
		var t loadTable
		if t, err = decodeTable(data); err != nil {
			if !errors.Is(err, ErrTableGarbage) {
				return false, fmt.Errorf("error %v is not ErrTableGarbage", err)
			}
			return false, nil
		}
		if t.total() < 0 || t.unplaced() < 0 {
			return true, fmt.Errorf("table of %d units, %d unplaced", t.total(), t.unplaced())
		}
		for s, n := range t.units() {
			if n <= 0 {
				return true, fmt.Errorf("server %q holds %d units", s, n)
			}
		}
		again, err := decodeTable(t.encode())
		if err != nil {
			return true, fmt.Errorf("the decoded table does not decode once encoded: %v", err)
		}
		if !maps.Equal(again.units(), t.units()) || again.total() != t.total() {
			return true, fmt.Errorf("the table changed through its encoding: %v, %v", t.units(), again.units())
		}
		return true, nil
	default:
		return false, fmt.Errorf("unknown kind %q", kind)
	}
	if err != nil {
		if !errors.Is(err, stored.ErrBadValue) {
			return false, fmt.Errorf("error %v is not stored.ErrBadValue", err)
		}
		return false, nil
	}
	return true, nil
}
