package job

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/shardjob/shardjob/job/internal/retry"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Retries of a failed item run: the policy (Config.Retry), its checks,
// its YAML and its stored form. The run's attempts are executeItem's
// (execute.go); the arithmetic is package retry's.

// Limits and defaults of RetryPolicy.
const (
	// MaxRetryAttempts is the largest RetryPolicy.Attempts accepted.
	MaxRetryAttempts = 100
	// MaxRetryBackoff is the largest RetryPolicy.Backoff and MaxBackoff
	// accepted.
	MaxRetryBackoff = 24 * time.Hour
	// DefaultRetryBackoff is the first wait when Attempts is set and
	// Backoff is 0 (or MaxBackoff, when that is shorter).
	DefaultRetryBackoff = time.Second
	// DefaultRetryMaxBackoff is the cap when Attempts is set and
	// MaxBackoff is 0 (or Backoff, when that is longer).
	DefaultRetryMaxBackoff = 30 * time.Second
)

// RetryPolicy says how a failed item run is tried again (Config.Retry).
// The zero value retries nothing.
//
// A run has failed when Execute returned an error (a panic and a timeout,
// Config.Timeout, included); a run cut short — shutdown, a lost session,
// the item moved, replaced by a later fire — is not retried here: its
// fire is handed over as it always is. The retry runs on the same
// instance, under the same running mark, as the same fire
// (ShardingContext.Attempt counts), after a wait; if the item's next
// fire comes before the wait ends, the retry yields to that fire (and its
// overlap policy) and the fire stays failed. A shutdown during the wait
// hands the fire over (with Failover, the failed attempts in its queue
// entry, so the next owner continues the count); a crash or a lost
// session restarts the count at the fire's next run (docs/guarantees.md).
//
// In YAML: retry: {attempts: 3, backoff: 1s, maxBackoff: 30s, jitter: 0.2}.
type RetryPolicy struct {
	// Attempts is how many times a failed run is tried again after its
	// first failure: 0 (the default) never, at most MaxRetryAttempts. The
	// other fields need it.
	Attempts int
	// Backoff is the wait before the first retry; each later retry waits
	// twice as long as the one before, up to MaxBackoff. 0 means
	// DefaultRetryBackoff (or MaxBackoff, when shorter); at most
	// MaxRetryBackoff.
	Backoff time.Duration
	// MaxBackoff caps the doubled wait. 0 means DefaultRetryMaxBackoff
	// (or Backoff, when longer); otherwise at least Backoff and at most
	// MaxRetryBackoff.
	MaxBackoff time.Duration
	// Jitter, from 0 to 1, spreads each wait at random over ±Jitter of it
	// (0.2: from 80% to 120%), so that items failing together do not all
	// retry at once. 0, the default, waits exactly.
	Jitter float64
}

// policy is p with its defaults filled in, as package retry takes it.
func (p RetryPolicy) policy() retry.Policy {
	d := p.withDefaults()
	return retry.Policy{Attempts: d.Attempts, Backoff: d.Backoff, MaxBackoff: d.MaxBackoff, Jitter: d.Jitter}
}

// withDefaults fills in Backoff and MaxBackoff when Attempts is set.
func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Attempts <= 0 {
		return p
	}
	if p.Backoff == 0 {
		p.Backoff = DefaultRetryBackoff
		if p.MaxBackoff > 0 && p.MaxBackoff < p.Backoff {
			p.Backoff = p.MaxBackoff
		}
	}
	if p.MaxBackoff == 0 {
		p.MaxBackoff = max(DefaultRetryMaxBackoff, p.Backoff)
	}
	return p
}

// retryProblems adds c.Retry's problems, each keyed "retry" and naming
// the field as retry.<field>.
func (c Config) retryProblems(add func(key string, kind error, subject, detail string) *configError) {
	p := c.Retry
	bad := func(field string, value any, detail string) {
		add("retry", ErrInvalidConfig, fmt.Sprintf("retry.%s %v", field, value), detail)
	}
	if p.Attempts < 0 || p.Attempts > MaxRetryAttempts {
		bad("attempts", p.Attempts, fmt.Sprintf("must be between 0 (no retries) and %d", MaxRetryAttempts))
	}
	if p.Backoff < 0 || p.Backoff > MaxRetryBackoff {
		bad("backoff", p.Backoff, fmt.Sprintf("must be between 0 (the default %v) and %v", DefaultRetryBackoff, MaxRetryBackoff))
	}
	switch {
	case p.MaxBackoff < 0 || p.MaxBackoff > MaxRetryBackoff:
		bad("maxBackoff", p.MaxBackoff, fmt.Sprintf("must be between 0 (the default %v) and %v", DefaultRetryMaxBackoff, MaxRetryBackoff))
	case p.MaxBackoff > 0 && p.MaxBackoff < p.Backoff:
		bad("maxBackoff", p.MaxBackoff, fmt.Sprintf("is shorter than retry.backoff %v: the cap of the doubled wait must be at least the first", p.Backoff))
	}
	if !(p.Jitter >= 0 && p.Jitter <= 1) { // NaN too
		bad("jitter", p.Jitter, "must be between 0 and 1 (a fraction of each wait)")
	}
	if p.Attempts == 0 && (p.Backoff != 0 || p.MaxBackoff != 0 || p.Jitter != 0) {
		add("retry", ErrInvalidConfig, "retry", "sets backoff, maxBackoff or jitter without attempts: set retry.attempts (how many times to try again)")
	}
}

// retryStep is what follows a failed attempt (nextAttempt).
type retryStep struct {
	decision retry.Decision
	at       time.Time // when the next attempt starts (Retry), or would have (Yield)
	next     time.Time // the item's next fire; zero: none
}

// retries reports whether another attempt follows.
func (s retryStep) retries() bool { return s.decision == retry.Retry }

// nextAttempt decides what follows the failure of sc's attempt: another
// attempt after the policy's wait, unless the item's next fire (after the
// latest fire the run stands for) comes first, when the retry yields to
// it. A job without a policy stops at once.
func (r *runner) nextAttempt(cfg *spec, sc ShardingContext) retryStep {
	if cfg.Retry.Attempts == 0 {
		return retryStep{}
	}
	var next time.Time
	if sched, _, err := cfg.Schedule(); err == nil {
		last := sc.Through
		if last.Before(sc.FireTime) {
			last = sc.FireTime
		}
		next = sched.Next(last)
	}
	d, at := cfg.Retry.policy().Next(sc.Attempt, r.s.opts.now(), next, rand.Float64())
	step := retryStep{decision: d, at: at, next: next}
	switch d {
	case retry.Yield:
		r.log.Warn("retry yields to the item's next fire", "item", sc.Item, "fire", sc.FireTime, "attempt", sc.Attempt,
			"retryAt", at, "nextFire", next)
	case retry.Stop:
		if sc.Attempt > 1 {
			r.log.Warn("item failed on its last attempt", "item", sc.Item, "fire", sc.FireTime, "attempts", sc.Attempt)
		}
	}
	return step
}

// awaitRetry waits, under the run's context, for the next attempt's time
// and reports whether it may start. The item stays reserved here and
// marked running meanwhile, so no other run of it starts, here or
// elsewhere. A wait the run's context ends (a lost session, a later fire
// replacing it, shutdown's deadline) or that a stop ends leaves res as a
// run cut short (handed over as any other) or, replaced, a failure.
func (r *runner) awaitRetry(ctx *runCtx, res *itemResult, sc ShardingContext, step retryStep) bool {
	var cause error
	select {
	case <-r.s.gates.Until(r.s.clock, step.at):
		if ctx.Err() == nil && r.ctx.life.Err() == nil {
			r.counters.retries.Add(1)
			r.log.Info("retrying item", "item", sc.Item, "fire", sc.FireTime, "attempt", sc.Attempt+1)
			return true
		}
		cause = context.Cause(ctx)
	case <-ctx.Done():
		cause = context.Cause(ctx)
	case <-r.ctx.life.Done():
	}
	switch {
	case ctx.replaced():
		res.Err = replacedError(res.Err)
	case cause != nil:
		res.Halted, res.FailedAttempts = cause, sc.Attempt
	default:
		res.Halted, res.FailedAttempts = ErrSchedulerClosed, sc.Attempt
	}
	r.log.Info("retry given up: the run was cut short while it waited", "item", sc.Item, "fire", sc.FireTime,
		"attempt", sc.Attempt, "cause", context.Cause(ctx))
	return false
}

// endAttempt ends an attempt's span (nil: tracing is off), with its
// attempt number; an attempt that another follows is not counted among
// the fire's failed items.
func (f *fire) endAttempt(span trace.Span, attempt int, err, halted error, retrying bool) {
	if span == nil {
		return
	}
	span.SetAttributes(AttrAttempt.Int(attempt))
	if !retrying {
		f.endItem(span, err, halted)
		return
	}
	span.RecordError(err)
	span.SetAttributes(AttrRetried.Bool(true))
	span.SetStatus(codes.Error, err.Error())
	span.End()
}

// failedAttempts are the attempts of fire that failed on an item's
// previous owner (failover.Entry.Attempts).
type failedAttempts struct {
	fire time.Time
	n    int
}

// failedBefore is how many attempts of the fire at failed before this
// run, on the owner that handed the item over: 0 but for a failover run
// of that very fire. A hostile count is bounded by the policy's limit.
func (f *fire) failedBefore(item int, at time.Time) int {
	fa, ok := f.failedAttempts[item]
	if !ok || !fa.fire.Equal(at) || fa.n <= 0 {
		return 0
	}
	return min(fa.n, MaxRetryAttempts)
}
