package job

import "time"

// A registration step of Start (or of Add after it) that fails because the
// connection dropped, or the session ended, is tried again
// (registration.Retry) for startRetryBound of failures in a row, or until
// ctx ends; the last error is Start's.

// startRetryBound is how long registration steps are retried after the
// first failure on a lost connection or session: two session timeouts
// cover a connection that comes back within its session and a session
// that ends and is replaced.
func (s *Scheduler) startRetryBound() time.Duration { return 2 * s.sessionTimeout() }
