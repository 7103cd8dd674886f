package configcheck

import (
	"errors"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shardjob/shardjob/internal/docsubset"
	"github.com/shardjob/shardjob/job/internal/schedule"
)

// Calendar checks a job's calendar (cal), its starting deadline and its
// pause's note; base is the job's parsed cron (nil when it does not
// parse), whose fires in loc the calendar must not all remove.
func Calendar(add Add, cal schedule.Calendar, startingDeadline time.Duration, pauseNote string, base cron.Schedule, loc *time.Location) {
	if !cal.Start.IsZero() && !cal.End.IsZero() && cal.End.Before(cal.Start) {
		add.invalid("end", "end "+cal.End.Format(time.RFC3339), "is before start "+cal.Start.Format(time.RFC3339))
	}
	limit := fmt.Sprintf("limit %d", cal.Limit)
	switch {
	case cal.Limit < 0:
		add.invalid("limit", limit, "must not be negative (0 means no limit)")
	case cal.Limit > MaxLimit:
		add.invalid("limit", limit, fmt.Sprintf("must be at most %d", MaxLimit))
	case cal.Limit > 0 && cal.Start.IsZero():
		add.invalid("limit", limit, "counts fires from start: set start too")
	}
	if base != nil {
		if key, why := schedule.NeverFires(base, loc, cal); key != "" {
			subject := "exclude " + docsubset.QuoteShort(cal.Exclude)
			if key == "end" {
				subject = "end " + cal.End.Format(time.RFC3339)
			}
			add(key, NeverFires, subject, why)
		}
	}
	if cal.Jitter < 0 {
		add.invalid("jitter", fmt.Sprintf("jitter %v", cal.Jitter), "must not be negative (0 means none)")
	} else if cal.Jitter > 0 && cal.Jitter < time.Millisecond {
		add.invalid("jitter", fmt.Sprintf("jitter %v", cal.Jitter), "must be 0 or at least 1ms")
	}
	deadline := fmt.Sprintf("startingDeadline %v", startingDeadline)
	switch {
	case startingDeadline < 0:
		add.invalid("startingDeadline", deadline, "must not be negative (0 means no deadline)")
	case startingDeadline > 0 && startingDeadline < MinInterval:
		add.invalid("startingDeadline", deadline, fmt.Sprintf("must be 0 (no deadline) or at least %v", MinInterval))
	}
	if pauseNote != "" && cal.PausedUntil.IsZero() {
		add.invalid("pauseNote", "pauseNote", "is the note of a pause: set pausedUntil too")
	}
	if _, problems := schedule.ParseExclude(cal.Exclude); len(problems) > 0 {
		for _, p := range problems {
			add.invalid("exclude", "exclude "+docsubset.QuoteShort(cal.Exclude), p)
		}
	}
}

// An Ending says which field of a config ended its schedule: its key,
// what it is, and why it leaves no fire.
type Ending struct {
	Key, Subject, Detail string
}

// Ended reports whether cs, the schedule of cron with the calendar cal,
// has no fire after now (a next fire beyond the search's horizon is not
// an end), and then which field ended it: limit, pausedUntil, end, or
// the cron itself.
func Ended(cs *schedule.CalendarSchedule, cronSpec string, cal schedule.Calendar, now time.Time) (Ending, bool) {
	if _, err := cs.FireAfter(now); !errors.Is(err, schedule.ErrEnded) {
		return Ending{}, false
	}
	_, freeErr := cs.NominalIgnoringLimit(now)
	switch {
	case freeErr == nil && cal.Limit > 0:
		return Ending{"limit", fmt.Sprintf("limit %d", cal.Limit), fmt.Sprintf("is used up: the %d fires from start %s are all before %s",
			cal.Limit, cal.Start.Format(time.RFC3339), now.Format(time.RFC3339))}, true
	case freeErr == nil && !cal.PausedUntil.IsZero():
		return Ending{"pausedUntil", "pausedUntil " + cal.PausedUntil.Format(time.RFC3339), "is after the last fire the schedule has"}, true
	case !cal.End.IsZero():
		return Ending{"end", "end " + cal.End.Format(time.RFC3339), "leaves no fire after " + now.Format(time.RFC3339)}, true
	}
	return Ending{"cron", "cron " + docsubset.QuoteShort(cronSpec), "has no fire after " + now.Format(time.RFC3339)}, true
}
