package configcheck

import (
	"fmt"
	"time"

	"github.com/shardjob/shardjob/job/internal/schedule"
)

// Schedule is what a job fires on: its cron, its time zone and its
// calendar (whose Name is not compared).
type Schedule struct {
	Cron, TimeZone string
	Calendar       schedule.Calendar
}

// SameCalendar reports whether a and b have the same calendar, jitter
// included: a change reschedules the job.
func SameCalendar(a, b schedule.Calendar) bool {
	return a.Start.Equal(b.Start) && a.End.Equal(b.End) && a.PausedUntil.Equal(b.PausedUntil) &&
		a.Limit == b.Limit && a.Exclude == b.Exclude && a.Jitter == b.Jitter
}

// SameFires reports whether s and o have the same fires before jitter: a
// dependent's fire is matched to its parents' fires by the schedule's
// time before each job's jitter (schedule.NominalFire), so the jitters
// may differ.
func (s Schedule) SameFires(o Schedule) bool {
	s.Calendar.Jitter, o.Calendar.Jitter = 0, 0
	return s.Cron == o.Cron && s.TimeZone == o.TimeZone && SameCalendar(s.Calendar, o.Calendar)
}

// Difference names the first field on which s, a parent's schedule,
// differs from dependent's, with both values.
func (s Schedule) Difference(dependent Schedule) string {
	t := func(v time.Time) string {
		if v.IsZero() {
			return "unset"
		}
		return v.Format(time.RFC3339)
	}
	p, d := s.Calendar, dependent.Calendar
	for _, f := range []struct{ key, p, d string }{
		{"cron", s.Cron, dependent.Cron},
		{"timeZone", s.TimeZone, dependent.TimeZone},
		{"start", t(p.Start), t(d.Start)},
		{"end", t(p.End), t(d.End)},
		{"pausedUntil", t(p.PausedUntil), t(d.PausedUntil)},
		{"limit", fmt.Sprint(p.Limit), fmt.Sprint(d.Limit)},
		{"exclude", p.Exclude, d.Exclude},
	} {
		if f.p != f.d {
			return fmt.Sprintf("%s %q there, %q here", f.key, f.p, f.d)
		}
	}
	return "the same fields, other fires"
}
