package job

import (
	"time"

	"github.com/shardjob/shardjob/job/internal/assume"
	"github.com/shardjob/shardjob/job/internal/retry"
)

// Retries of a failed item run: the policy (Config.Retry), whose checks
// are job/internal/configcheck's. A run's attempts are
// job/internal/execute's; the limits, defaults and arithmetic are package
// retry's.

// Limits and defaults of RetryPolicy.
const (
	// MaxRetryAttempts is the largest RetryPolicy.Attempts accepted.
	MaxRetryAttempts = retry.MaxAttempts
	// MaxRetryBackoff is the largest RetryPolicy.Backoff and MaxBackoff
	// accepted.
	MaxRetryBackoff = retry.MaxBackoff
	// DefaultRetryBackoff is the first wait when Attempts is set and
	// Backoff is 0 (or MaxBackoff, when that is shorter).
	DefaultRetryBackoff = retry.DefaultBackoff
	// DefaultRetryMaxBackoff is the cap when Attempts is set and
	// MaxBackoff is 0 (or Backoff, when that is longer).
	DefaultRetryMaxBackoff = retry.DefaultMaxBackoff
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
func (p RetryPolicy) policy() retry.Policy { return retry.Policy(p).WithDefaults() }

// withDefaults fills in Backoff and MaxBackoff when Attempts is set.
func (p RetryPolicy) withDefaults() RetryPolicy { return RetryPolicy(p.policy()) }

// failedAttempts are the attempts of a fire that failed on an item's
// previous owner (failover.Entry.Attempts, or its retry node).
type failedAttempts = assume.Failed
