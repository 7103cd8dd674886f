package job

import (
	"context"
	"log/slog"
	"time"

	"github.com/shardjob/shardjob/job/internal/registration"
)

// A registration step of Start (or of Add after it) that fails because the
// connection dropped, or the session ended, is tried again
// (registration.Retry) for startRetryBound of failures in a row, or until
// ctx ends; the last error is Start's.

// startRetryBound is how long registration steps are retried after the
// first failure on a lost connection or session: two session timeouts
// cover a connection that comes back within its session and a session
// that ends and is replaced.
func (s *Scheduler) startRetryBound() time.Duration { return 2 * s.sessionTimeout() }

// retryRegistration calls step until it succeeds, fails otherwise than by
// a lost connection or session, ctx ends, or bound has passed since its
// first failure (registration.Retry).
func retryRegistration(ctx context.Context, log *slog.Logger, bound time.Duration, what string, step func() error) error {
	return registration.Retry(ctx, log, bound, what, step)
}
