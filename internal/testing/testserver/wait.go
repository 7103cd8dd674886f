package testserver

import (
	"context"
	"time"
)

// The times a test server is given.
const (
	// DefaultTimeout bounds a wait whose context has no deadline: a
	// cluster starting, a member restarting, a leader being elected.
	DefaultTimeout = 2 * time.Minute
	// StopGrace is how long a server stopping gracefully may take after
	// SIGTERM before it gets SIGKILL, and how long a killed one may take
	// to be reaped.
	StopGrace = 10 * time.Second
	// PollInterval is how often a server's readiness is polled.
	PollInterval = 50 * time.Millisecond
)

// WithDefaultTimeout returns ctx, bounded by DefaultTimeout when it has
// no deadline of its own.
func WithDefaultTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, DefaultTimeout)
}

// Sleep waits d, or until ctx ends (returning its error).
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
