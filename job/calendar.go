package job

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
)

// A job's calendar: what narrows or shifts the fires its cron expression
// gives — a window (Start, End), a pause until a time (PausedUntil), a
// limit on the number of fires (Limit), dates and weekdays excluded
// (Exclude), and a delay per fire (Jitter). They are applied inside the
// schedule itself (calendarSchedule), not by the fire path: a fire the
// calendar removes does not exist, so nothing owes it, makes it up or
// records it, and every instance computes the same fires from the config.

// MaxLimit is the largest Limit accepted: the last fire it allows is
// computed once, by walking that many fires.
const MaxLimit = 100_000

// maxExcludeEntries bounds the entries of Exclude.
const maxExcludeEntries = 1000

// excludedDays are the dates and weekdays a job does not fire on, in its
// time zone.
type excludedDays struct {
	weekdays [7]bool
	dates    map[[3]int]bool // year, month, day
}

func (x excludedDays) isZero() bool { return len(x.dates) == 0 && x.weekdays == [7]bool{} }

// excludes reports whether t's day (in t's location) is excluded.
func (x excludedDays) excludes(t time.Time) bool {
	if x.weekdays[t.Weekday()] {
		return true
	}
	y, m, d := t.Date()
	return x.dates[[3]int{y, int(m), d}]
}

var weekdayNames = map[string]time.Weekday{
	"sun": time.Sunday, "sunday": time.Sunday,
	"mon": time.Monday, "monday": time.Monday,
	"tue": time.Tuesday, "tues": time.Tuesday, "tuesday": time.Tuesday,
	"wed": time.Wednesday, "wednesday": time.Wednesday,
	"thu": time.Thursday, "thur": time.Thursday, "thurs": time.Thursday, "thursday": time.Thursday,
	"fri": time.Friday, "friday": time.Friday,
	"sat": time.Saturday, "saturday": time.Saturday,
}

// parseExclude parses Exclude: entries separated by commas, each a weekday
// ("sat", "Sunday") or a date ("2026-12-25"). It returns every problem.
func parseExclude(s string) (excludedDays, []string) {
	var x excludedDays
	if strings.TrimSpace(s) == "" {
		return x, nil
	}
	var problems []string
	entries := strings.Split(s, ",")
	if len(entries) > maxExcludeEntries {
		return x, []string{fmt.Sprintf("has %d entries; at most %d are accepted", len(entries), maxExcludeEntries)}
	}
	for i, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			problems = append(problems, fmt.Sprintf("entry %d is empty", i+1))
			continue
		}
		if wd, ok := weekdayNames[strings.ToLower(e)]; ok {
			x.weekdays[wd] = true
			continue
		}
		d, err := time.Parse(time.DateOnly, e)
		if err != nil {
			problems = append(problems, fmt.Sprintf("entry %s is neither a weekday (mon..sun) nor a date (2006-01-02)", quoteShort(e)))
			continue
		}
		if x.dates == nil {
			x.dates = map[[3]int]bool{}
		}
		x.dates[[3]int{d.Year(), int(d.Month()), d.Day()}] = true
	}
	return x, problems
}

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

// calendarSchedule is a job's cron schedule with its calendar applied. The
// fires of base that fall before start or pausedUntil, after end, on an
// excluded day, or after the limit-th fire from start, are left out; each
// fire left is then delayed by its jitter. Next returns the delayed times:
// they are the fires' times everywhere (the fire's identity, its records,
// what a make-up run covers).
type calendarSchedule struct {
	base        cron.Schedule
	loc         *time.Location
	start, end  time.Time
	pausedUntil time.Time
	exclude     excludedDays
	limit       int
	jitter      time.Duration
	job         string

	lastOnce sync.Once
	last     time.Time // the limit-th fire from start (zero: no limit)
}

// newCalendarSchedule applies c's calendar to base.
func newCalendarSchedule(c Config, base cron.Schedule, loc *time.Location) *calendarSchedule {
	x, _ := parseExclude(c.Exclude)
	return &calendarSchedule{base: base, loc: loc, start: c.Start, end: c.End, pausedUntil: c.PausedUntil,
		exclude: x, limit: c.Limit, jitter: c.Jitter, job: c.Name}
}

// Next returns the first fire after t, or zero if there is none.
func (s *calendarSchedule) Next(t time.Time) time.Time {
	if s.jitter <= 0 {
		return s.nextNominal(t)
	}
	// A fire's delay is less than jitter, so the first fire after t comes
	// from a nominal fire after t-jitter; delays never reorder fires (see
	// delay).
	for n := s.nextNominal(t.Add(-s.jitter)); !n.IsZero(); n = s.nextNominal(n) {
		if at := n.Add(s.delay(n)); at.After(t) {
			return at
		}
	}
	return time.Time{}
}

// delay is the jitter of the nominal fire n: derived from the job's name
// and n, so that every instance computes the same, less than jitter, and
// less than half the time to the next nominal fire, so that fires keep
// their order.
func (s *calendarSchedule) delay(n time.Time) time.Duration {
	h := fnv.New64a()
	h.Write([]byte(s.job))
	h.Write([]byte(strconv.FormatInt(n.UnixMilli(), 10)))
	bound := s.jitter
	if after := s.nextNominal(n); !after.IsZero() {
		bound = min(bound, after.Sub(n)/2)
	}
	if bound < time.Millisecond {
		return 0
	}
	// Whole milliseconds: fire times are kept in milliseconds.
	return time.Duration(h.Sum64()%uint64(bound/time.Millisecond)) * time.Millisecond
}

// nextNominal is the first fire of base after t that the calendar keeps,
// before jitter.
func (s *calendarSchedule) nextNominal(t time.Time) time.Time {
	for _, from := range [2]time.Time{s.start, s.pausedUntil} {
		if !from.IsZero() && t.Before(from) {
			t = from.Add(-time.Nanosecond)
		}
	}
	last := s.limitLast()
	for range 100_000 {
		n := s.base.Next(t)
		if n.IsZero() || (!s.end.IsZero() && n.After(s.end)) || (!last.IsZero() && n.After(last)) {
			return time.Time{}
		}
		if s.exclude.isZero() {
			return n
		}
		local := n.In(s.loc)
		if !s.exclude.excludes(local) {
			return n
		}
		// Skip the rest of the excluded day at once.
		y, m, d := local.Date()
		t = time.Date(y, m, d+1, 0, 0, 0, 0, s.loc).Add(-time.Nanosecond)
	}
	return time.Time{} // every day for 270 years excluded
}

// limitLast is the last fire the limit allows: the limit-th fire kept from
// start, computed once.
func (s *calendarSchedule) limitLast() time.Time {
	if s.limit <= 0 || s.start.IsZero() {
		return time.Time{}
	}
	s.lastOnce.Do(func() {
		free := &calendarSchedule{base: s.base, loc: s.loc, start: s.start, end: s.end, exclude: s.exclude}
		t := s.start.Add(-time.Nanosecond)
		for range s.limit {
			n := free.nextNominal(t)
			if n.IsZero() {
				break // the window ends first
			}
			t = n
		}
		s.last = t
	})
	return s.last
}

// calendarProblems checks c's calendar fields; loc is the job's zone.
func (c Config) calendarProblems(add func(key string, kind error, subject, detail string) *configError) {
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
	if _, problems := parseExclude(c.Exclude); len(problems) > 0 {
		for _, p := range problems {
			add("exclude", ErrInvalidConfig, "exclude "+quoteShort(c.Exclude), p)
		}
	}
}

// parseConfigTime reads a calendar time from a document: RFC 3339
// ("2026-12-01T08:00:00Z"), a date and time without an offset, read in
// loc ("2026-12-01T08:00:00"), or a date, midnight in loc ("2026-12-01").
func parseConfigTime(s string, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02 15:04:05", time.DateOnly} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf(`%s is not a time such as "2026-12-01T08:00:00Z", "2026-12-01T08:00:00" (in the job's time zone) or "2026-12-01"`, quoteShort(s))
}

// configTimeText writes a calendar time for a document (RFC 3339), or ""
// for the zero time.
func configTimeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339Nano)
}
