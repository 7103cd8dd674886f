// Package retry is the arithmetic of a job's retries (job.RetryPolicy):
// a policy's limits and the defaults it runs with (defaults.go), how long a failed item run waits before its next attempt, and whether
// that attempt may still start before the item's next fire. It knows
// nothing of registries or runners: pure functions of a policy, an
// attempt number and times, tested without a clock.
package retry

import (
	"math"
	"time"
)

// Policy is a job's retry policy with its defaults filled in (see
// job.RetryPolicy).
type Policy struct {
	// Attempts is how many times a failed run is tried again; 0: never.
	Attempts int
	// Backoff is the wait before the first retry; each later wait
	// doubles it, up to MaxBackoff.
	Backoff time.Duration
	// MaxBackoff caps the doubled wait (before the jitter spreads it).
	MaxBackoff time.Duration
	// Jitter, in [0, 1], spreads each wait uniformly over ±Jitter of it.
	Jitter float64
}

// Wait is the wait before attempt (2 for the first retry, 3 for the
// second, ...): Backoff doubled attempt-2 times, capped at MaxBackoff,
// then spread by Jitter with u, a number in [0, 1) (rand.Float64). It is
// never negative; attempts below 2 wait Backoff.
func (p Policy) Wait(attempt int, u float64) time.Duration {
	d := p.Backoff
	for i := 2; i < attempt && d < p.MaxBackoff; i++ {
		if d > math.MaxInt64/2 {
			d = p.MaxBackoff
			break
		}
		d *= 2
	}
	if p.MaxBackoff > 0 && d > p.MaxBackoff {
		d = p.MaxBackoff
	}
	if p.Jitter > 0 && d > 0 {
		spread := (2*u - 1) * p.Jitter * float64(d)
		d += time.Duration(spread)
	}
	return max(d, 0)
}

// Decision is what becomes of a failed run (Next).
type Decision int

const (
	// Stop: no attempt is left.
	Stop Decision = iota
	// Retry: the next attempt starts after the wait.
	Retry
	// Yield: the next attempt would start at or after the item's next
	// fire, which decides instead (its overlap policy, as for any run
	// that failed).
	Yield
)

// String names d for logs.
func (d Decision) String() string {
	switch d {
	case Retry:
		return "retry"
	case Yield:
		return "yield"
	}
	return "stop"
}

// Next decides what follows the failure of attempt (1 for the first run)
// at now, given the item's next fire (zero: none) and u in [0, 1): Retry
// with the time the next attempt starts, Yield when that time is not
// before next, or Stop when the policy has no attempt left.
func (p Policy) Next(attempt int, now, next time.Time, u float64) (Decision, time.Time) {
	if attempt < 1 || attempt > p.Attempts {
		return Stop, time.Time{}
	}
	at := now.Add(p.Wait(attempt+1, u))
	if !next.IsZero() && !at.Before(next) {
		return Yield, at
	}
	return Retry, at
}
