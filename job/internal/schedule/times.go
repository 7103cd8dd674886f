package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shardjob/shardjob/internal/docsubset"
)

// ParseTime reads a calendar time from a document: RFC 3339
// ("2026-12-01T08:00:00Z"), a date and time without an offset, read in
// loc ("2026-12-01T08:00:00"), or a date, midnight in loc ("2026-12-01").
func ParseTime(s string, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02 15:04:05", time.DateOnly} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf(`%s is not a time such as "2026-12-01T08:00:00Z", "2026-12-01T08:00:00" (in the job's time zone) or "2026-12-01"`, docsubset.QuoteShort(s))
}

// MaxCounted bounds the walk CountFires makes.
const MaxCounted = 100_000

// CountFires counts the fires of sched from since (a fire) up to, not
// including, stop (zero: every fire after since), at most MaxCounted.
func CountFires(sched cron.Schedule, since, stop time.Time) int {
	n := 0
	for t := since; !t.IsZero() && n < MaxCounted && (stop.IsZero() || t.Before(stop)); t = sched.Next(t) {
		n++
	}
	return n
}
