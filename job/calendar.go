package job

import (
	"errors"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shardjob/shardjob/job/internal/configcheck"
	"github.com/shardjob/shardjob/job/internal/schedule"
)

// A job's calendar: what narrows or shifts the fires its cron expression
// gives — a window (Start, End), a pause until a time (PausedUntil), a
// limit on the number of fires (Limit), dates and weekdays excluded
// (Exclude), and a delay per fire (Jitter). They are applied inside the
// schedule itself (schedule.CalendarSchedule, built from the config
// here), not by the fire path: a fire the calendar removes does not
// exist, so nothing owes it, makes it up or records it, and every
// instance computes the same fires from the config.

// MaxLimit is the largest Limit accepted: the fires from start are
// counted towards it once, as far as the times asked need.
const MaxLimit = configcheck.MaxLimit

// hasCalendar reports whether c narrows or shifts its cron's fires.
func (c Config) hasCalendar() bool {
	return !c.Start.IsZero() || !c.End.IsZero() || !c.PausedUntil.IsZero() || c.Limit > 0 ||
		strings.TrimSpace(c.Exclude) != "" || c.Jitter > 0
}

// sameCalendar reports whether a and b have the same calendar: a change
// reschedules the job.
func sameCalendar(a, b Config) bool { return configcheck.SameCalendar(calendarOf(a), calendarOf(b)) }

// ScheduleHorizonYears bounds how far ahead a calendar's next fire is
// searched: a calendar whose next fire is further away than that reports
// ErrNoFireWithinHorizon instead of searching on.
const ScheduleHorizonYears = 100

var (
	// ErrScheduleEnded means a job's schedule has no further fire: its End
	// has passed, its Limit is used up, or its calendar leaves no fire
	// after the time asked. Validate accepts such configs (they were valid
	// before and stay valid for ever); Scheduler.Add refuses them, and
	// Config.NextFireAfter reports them.
	ErrScheduleEnded = errors.New("job: schedule ended: no further fires")
	// ErrNoFireWithinHorizon means no fire of a job's schedule was found
	// within ScheduleHorizonYears (or within the bounded work one search
	// may do): the calendar excludes nearly every day its cron fires on.
	ErrNoFireWithinHorizon = errors.New("job: no fire within 100 years")
	// ErrNeverFires means a config's calendar leaves its cron no fire at
	// all: every weekday the cron fires on is excluded, or no fire falls
	// between start and end. Validate reports it (with ErrInvalidConfig),
	// naming the field.
	ErrNeverFires = errors.New("job: schedule never fires")
)

// calendarOf is c's calendar, as package schedule takes it.
func calendarOf(c Config) schedule.Calendar {
	return schedule.Calendar{Name: c.Name, Start: c.Start, End: c.End, PausedUntil: c.PausedUntil,
		Limit: c.Limit, Exclude: c.Exclude, Jitter: c.Jitter}
}

// newCalendarSchedule applies c's calendar to base, a schedule parseCron
// made in loc.
func newCalendarSchedule(c Config, base cron.Schedule, loc *time.Location) *schedule.CalendarSchedule {
	return schedule.Apply(base, loc, calendarOf(c))
}

// parseCron parses a non-empty spec and applies loc to it (see
// schedule.ParseCron). The error has no place.
func parseCron(spec string, loc *time.Location) (cron.Schedule, *configError) {
	sched, err := schedule.ParseCron(spec, loc, MinInterval)
	if err != nil {
		return nil, &configError{key: "cron", kind: ErrInvalidCron, subject: "cron " + quoteShort(spec),
			detail: err.Detail, hint: err.Hint, cause: err.Cause}
	}
	return sched, nil
}

// NextFireAfter returns the first fire of c's schedule after t, its
// calendar and jitter applied, as every instance computes it; Disabled is
// not considered. When no fire follows t — End has passed, Limit is used
// up — the error is ErrScheduleEnded; when none was found within
// ScheduleHorizonYears, ErrNoFireWithinHorizon. The work is bounded
// whatever the config. An invalid cron or time zone gives Schedule's
// error. Whoever accepts a job to run from now on (Scheduler.Add, an HTTP
// endpoint creating jobs) refuses one whose error is ErrScheduleEnded.
func (c Config) NextFireAfter(t time.Time) (time.Time, error) {
	cs, err := c.calendarSchedule()
	if err != nil {
		return time.Time{}, err
	}
	n, err := cs.FireAfter(t)
	return n, searchError(err)
}

// calendarSchedule is c's schedule (see Schedule) as a calendar's, which
// searches past a cron's own five years without a fire.
func (c Config) calendarSchedule() (*schedule.CalendarSchedule, error) {
	sched, loc, err := c.Schedule()
	if err != nil {
		return nil, err
	}
	if cs, ok := sched.(*schedule.CalendarSchedule); ok {
		return cs, nil
	}
	return newCalendarSchedule(Config{Name: c.Name}, sched, loc), nil
}

// searchError is err, an error of a schedule.CalendarSchedule's search,
// as job's own sentinel.
func searchError(err error) error {
	switch {
	case errors.Is(err, schedule.ErrEnded):
		return ErrScheduleEnded
	case errors.Is(err, schedule.ErrNoFireWithinHorizon):
		return ErrNoFireWithinHorizon
	}
	return err
}
