package configcheck

import (
	"fmt"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shardjob/shardjob/job/internal/retry"
)

// Retry checks a retry policy as the config says it (before its
// defaults), each problem keyed "retry" and naming the field as
// retry.<field>.
func Retry(add Add, p retry.Policy) {
	bad := func(field string, value any, detail string) {
		add.invalid("retry", fmt.Sprintf("retry.%s %v", field, value), detail)
	}
	if p.Attempts < 0 || p.Attempts > retry.MaxAttempts {
		bad("attempts", p.Attempts, fmt.Sprintf("must be between 0 (no retries) and %d", retry.MaxAttempts))
	}
	if p.Backoff < 0 || p.Backoff > retry.MaxBackoff {
		bad("backoff", p.Backoff, fmt.Sprintf("must be between 0 (the default %v) and %v", retry.DefaultBackoff, retry.MaxBackoff))
	}
	switch {
	case p.MaxBackoff < 0 || p.MaxBackoff > retry.MaxBackoff:
		bad("maxBackoff", p.MaxBackoff, fmt.Sprintf("must be between 0 (the default %v) and %v", retry.DefaultMaxBackoff, retry.MaxBackoff))
	case p.MaxBackoff > 0 && p.MaxBackoff < p.Backoff:
		bad("maxBackoff", p.MaxBackoff, fmt.Sprintf("is shorter than retry.backoff %v: the cap of the doubled wait must be at least the first", p.Backoff))
	}
	if !(p.Jitter >= 0 && p.Jitter <= 1) { // NaN too
		bad("jitter", p.Jitter, "must be between 0 and 1 (a fraction of each wait)")
	}
	if p.Attempts == 0 && (p.Backoff != 0 || p.MaxBackoff != 0 || p.Jitter != 0) {
		add.invalid("retry", "retry", "sets backoff, maxBackoff or jitter without attempts: set retry.attempts (how many times to try again)")
	}
}

// Alert checks an alert policy's bounds, late and notRunFor: each 0 or
// at least MinInterval, and notRunFor no shorter than the longest gap
// between the next fires of base after now (base is the parsed cron; nil
// when it did not parse, or to check the bounds alone).
func Alert(add Add, late, notRunFor time.Duration, base cron.Schedule, now time.Time) {
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"late", late}, {"notRunFor", notRunFor}} {
		switch {
		case f.d < 0:
			add.invalid("alert", fmt.Sprintf("alert.%s %v", f.name, f.d), "must not be negative (0 means no alert)")
		case f.d > 0 && f.d < MinInterval:
			add.invalid("alert", fmt.Sprintf("alert.%s %v", f.name, f.d), fmt.Sprintf("must be 0 (no alert) or at least %v", MinInterval))
		}
	}
	if notRunFor < MinInterval || base == nil {
		return
	}
	if gap := LongestGap(base, now, alertGapFires); gap > notRunFor {
		add.invalid("alert", fmt.Sprintf("alert.notRunFor %v", notRunFor),
			fmt.Sprintf("is shorter than the %v between two of the schedule's fires: it would report the job between every two fires", gap))
	}
}

// LongestGap is the longest time between two consecutive fires among the
// next n of s after now (0 when it has fewer than two).
func LongestGap(s cron.Schedule, now time.Time, n int) time.Duration {
	var gap time.Duration
	prev := s.Next(now)
	for i := 0; i < n && !prev.IsZero(); i++ {
		next := s.Next(prev)
		if next.IsZero() {
			break
		}
		gap = max(gap, next.Sub(prev))
		prev = next
	}
	return gap
}
