package schedule

import (
	"time"

	"github.com/robfig/cron/v3"
)

// NominalFire is the time before jitter of at, a fire of sched: the
// schedule's own time, the one a dependent job and its parents share. A
// schedule that is not a CalendarSchedule with a jitter, or a time that is
// not one of its fires, is its own nominal time.
func NominalFire(sched cron.Schedule, at time.Time) time.Time {
	cs, ok := sched.(*CalendarSchedule)
	if !ok || cs.Jitter() <= 0 {
		return at
	}
	// A fire's delay is less than jitter: its nominal time is within
	// jitter before it.
	for n := cs.NextNominal(at.Add(-cs.Jitter() - time.Nanosecond)); !n.IsZero() && !n.After(at); n = cs.NextNominal(n) {
		if n.Add(cs.Delay(n)).Equal(at) {
			return n
		}
	}
	return at
}

// JitteredFire is the fire of sched whose time before jitter is n: the
// inverse of NominalFire.
func JitteredFire(sched cron.Schedule, n time.Time) time.Time {
	cs, ok := sched.(*CalendarSchedule)
	if !ok || cs.Jitter() <= 0 {
		return n
	}
	return n.Add(cs.Delay(n))
}
