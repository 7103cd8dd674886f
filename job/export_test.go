package job

import (
	"context"
	"fmt"
	"log/slog"
	"time"

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
// compares with ZooKeeper's (default time.Now), so that a test can
// simulate a skewed host clock.
func WithClockForTest(now func() time.Time) Option {
	return func(o *options) error {
		if now == nil {
			return fmt.Errorf("%w: nil clock", ErrInvalidOption)
		}
		o.now = now
		return nil
	}
}

// ReviewBooks runs a scheduler's namespace-wide pass over the load table
// (reviewBooks) once, on rc.
func ReviewBooks(ctx context.Context, rc regcenter.Center) error {
	return reviewBooks(ctx, rc, newPlacer(ctx, rc, slog.Default()))
}
