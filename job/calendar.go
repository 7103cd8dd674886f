package job

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

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
const MaxLimit = 100_000

// hasCalendar reports whether c narrows or shifts its cron's fires.
func (c Config) hasCalendar() bool {
	return !c.Start.IsZero() || !c.End.IsZero() || !c.PausedUntil.IsZero() || c.Limit > 0 ||
		strings.TrimSpace(c.Exclude) != "" || c.Jitter > 0
}

// sameCalendar reports whether a and b have the same calendar: a change
// reschedules the job.
func sameCalendar(a, b Config) bool {
	return a.Start.Equal(b.Start) && a.End.Equal(b.End) && a.PausedUntil.Equal(b.PausedUntil) &&
		a.Limit == b.Limit && a.Exclude == b.Exclude && a.Jitter == b.Jitter
}

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
	sched, loc, err := c.Schedule()
	if err != nil {
		return time.Time{}, err
	}
	cs, ok := sched.(*schedule.CalendarSchedule)
	if !ok {
		// A cron alone, searched as a calendar (which looks past the
		// cron's own five years without a fire).
		cs = newCalendarSchedule(Config{Name: c.Name}, sched, loc)
	}
	n, err := cs.FireAfter(t)
	return n, searchError(err)
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

// calendarProblems checks c's calendar fields; base is the job's cron
// (nil when it does not parse) and loc its zone.
func (c Config) calendarProblems(add func(key string, kind error, subject, detail string) *configError, base cron.Schedule, loc *time.Location) {
	if !c.Start.IsZero() && !c.End.IsZero() && c.End.Before(c.Start) {
		add("end", ErrInvalidConfig, "end "+c.End.Format(time.RFC3339), "is before start "+c.Start.Format(time.RFC3339))
	}
	switch {
	case c.Limit < 0:
		add("limit", ErrInvalidConfig, fmt.Sprintf("limit %d", c.Limit), "must not be negative (0 means no limit)")
	case c.Limit > MaxLimit:
		add("limit", ErrInvalidConfig, fmt.Sprintf("limit %d", c.Limit), fmt.Sprintf("must be at most %d", MaxLimit))
	case c.Limit > 0 && c.Start.IsZero():
		add("limit", ErrInvalidConfig, fmt.Sprintf("limit %d", c.Limit), "counts fires from start: set start too")
	}
	if base != nil {
		if key, why := schedule.NeverFires(base, loc, calendarOf(c)); key != "" {
			subject := "exclude " + quoteShort(c.Exclude)
			if key == "end" {
				subject = "end " + c.End.Format(time.RFC3339)
			}
			add(key, ErrNeverFires, subject, why)
		}
	}
	if c.Jitter < 0 {
		add("jitter", ErrInvalidConfig, fmt.Sprintf("jitter %v", c.Jitter), "must not be negative (0 means none)")
	} else if c.Jitter > 0 && c.Jitter < time.Millisecond {
		add("jitter", ErrInvalidConfig, fmt.Sprintf("jitter %v", c.Jitter), "must be 0 or at least 1ms")
	}
	switch {
	case c.StartingDeadline < 0:
		add("startingDeadline", ErrInvalidConfig, fmt.Sprintf("startingDeadline %v", c.StartingDeadline), "must not be negative (0 means no deadline)")
	case c.StartingDeadline > 0 && c.StartingDeadline < MinInterval:
		add("startingDeadline", ErrInvalidConfig, fmt.Sprintf("startingDeadline %v", c.StartingDeadline),
			fmt.Sprintf("must be 0 (no deadline) or at least %v", MinInterval))
	}
	if c.PauseNote != "" && c.PausedUntil.IsZero() {
		add("pauseNote", ErrInvalidConfig, "pauseNote", "is the note of a pause: set pausedUntil too")
	}
	if _, problems := schedule.ParseExclude(c.Exclude); len(problems) > 0 {
		for _, p := range problems {
			add("exclude", ErrInvalidConfig, "exclude "+quoteShort(c.Exclude), p)
		}
	}
}

// parseConfigTime reads a calendar time from a document (see
// schedule.ParseTime).
func parseConfigTime(s string, loc *time.Location) (time.Time, error) {
	return schedule.ParseTime(s, loc)
}

// configTimeText writes a calendar time for a document (RFC 3339), or ""
// for the zero time.
func configTimeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339Nano)
}
