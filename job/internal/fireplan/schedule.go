package fireplan

import "time"

// Schedule is a job's schedule: the first fire after a time (zero: none).
// robfig/cron's Schedule is one.
type Schedule interface {
	Next(time.Time) time.Time
}

// LeadOf is how long before the fire at next it is dispatched: lead, but
// no more than half the time from next to the fire after it, so that a
// fire is never dispatched before the one before it has had half its
// period.
func LeadOf(s Schedule, next time.Time, lead time.Duration) time.Duration {
	if lead <= 0 || next.IsZero() {
		return 0
	}
	if after := s.Next(next); !after.IsZero() {
		return min(lead, after.Sub(next)/2)
	}
	return lead
}

// DueAt is when the fire at next is dispatched: next less its lead.
func DueAt(s Schedule, next time.Time, lead time.Duration) time.Time {
	return next.Add(-LeadOf(s, next, lead))
}

// Due returns the latest fire of s dispatched by now with lead: the next
// fire once its lead has begun, otherwise the latest fire at or before now
// (zero if none in the past year).
func Due(s Schedule, now time.Time, lead time.Duration) time.Time {
	if n := s.Next(now); !n.IsZero() && !DueAt(s, n, lead).After(now) {
		return n
	}
	return Prev(s, now)
}

// Prev returns the latest fire of s at or before now, looking back at
// most a year (zero if none).
func Prev(s Schedule, now time.Time) time.Time {
	for back := time.Second; back <= 366*24*time.Hour; back *= 2 {
		t := s.Next(now.Add(-back))
		if t.IsZero() || t.After(now) {
			continue
		}
		for {
			n := s.Next(t)
			if n.IsZero() || n.After(now) {
				return t
			}
			t = n
		}
	}
	return time.Time{}
}

// MakeUpThrough is the latest fire a make-up run since since, reserved at
// now with lead, stands for: the latest fire due by then, or since itself
// when none later is. s may be nil (a schedule that did not compile): the
// run stands for since alone.
func MakeUpThrough(s Schedule, since, now time.Time, lead time.Duration) time.Time {
	if s != nil {
		if p := Due(s, now, lead); p.After(since) {
			return p
		}
	}
	return since
}
