package registration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

// A registration step of Start (or of Add after it) that fails because the
// connection dropped, or the session ended, is tried again: the center
// retries only its idempotent requests, and a transaction or a create that
// lost its answer may or may not have been applied. Every step is written
// to be tried again (a tree already made leaves its job to the node-by-node
// path; a status node already ours is taken as made). The retries stop at
// ctx's end or after a bound of failures in a row, whichever comes first,
// and the last error is Start's.

// LostConnection reports whether err may pass once the registry is
// reachable again.
func LostConnection(err error) bool {
	return errors.Is(err, regcenter.ErrConnectionLoss) || errors.Is(err, regcenter.ErrSessionLost)
}

// Retry calls step until it succeeds, fails otherwise than by a lost
// connection or session (LostConnection), ctx ends, or bound has passed
// since its first failure, with a backoff from 50ms to 1s; what names the
// step in the log. The error is step's last, noting how long it was tried.
func Retry(ctx context.Context, log *slog.Logger, bound time.Duration, what string, step func() error) error {
	err := step()
	if err == nil || !LostConnection(err) {
		return err
	}
	giveUp := time.Now().Add(bound)
	backoff := 50 * time.Millisecond
	timer := time.NewTimer(backoff)
	defer timer.Stop()
	for {
		log.Warn(what+" lost the registry; retrying", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (retried until the context ended: %v)", err, context.Cause(ctx))
		case <-timer.C:
		}
		if err = step(); err == nil || !LostConnection(err) {
			return err
		}
		if time.Now().After(giveUp) {
			return fmt.Errorf("%w (retried for %v)", err, bound)
		}
		backoff = min(2*backoff, time.Second)
		timer.Reset(backoff)
	}
}
