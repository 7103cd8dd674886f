package retry

import "time"

// The limits and defaults of a policy (job.RetryPolicy's, whose names
// are MaxRetryAttempts, MaxRetryBackoff, DefaultRetryBackoff and
// DefaultRetryMaxBackoff).
const (
	// MaxAttempts is the largest Attempts a job's policy may set.
	MaxAttempts = 100
	// MaxBackoff is the largest Backoff and MaxBackoff a job's policy may
	// set.
	MaxBackoff = 24 * time.Hour
	// DefaultBackoff is the first wait when Attempts is set and Backoff
	// is 0 (or MaxBackoff, when that is shorter).
	DefaultBackoff = time.Second
	// DefaultMaxBackoff is the cap when Attempts is set and MaxBackoff is
	// 0 (or Backoff, when that is longer).
	DefaultMaxBackoff = 30 * time.Second
)

// WithDefaults is p with Backoff and MaxBackoff filled in when Attempts
// is set: the policy a job's config says, as it runs.
func (p Policy) WithDefaults() Policy {
	if p.Attempts <= 0 {
		return p
	}
	if p.Backoff == 0 {
		p.Backoff = DefaultBackoff
		if p.MaxBackoff > 0 && p.MaxBackoff < p.Backoff {
			p.Backoff = p.MaxBackoff
		}
	}
	if p.MaxBackoff == 0 {
		p.MaxBackoff = max(DefaultMaxBackoff, p.Backoff)
	}
	return p
}
