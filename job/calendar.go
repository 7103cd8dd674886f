package job

import (
	"errors"
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

// MaxLimit is the largest Limit accepted: the fires from start are
// counted towards it once, as far as the times asked need.
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

// ScheduleHorizonYears bounds how far ahead a calendar's next fire is
// searched: a calendar whose next fire is further away than that reports
// ErrNoFireWithinHorizon instead of searching on.
const ScheduleHorizonYears = 100

// maxCalendarSteps bounds the fires of the cron one search for a
// calendar's next fire looks at (each an excluded day, skipped with the
// excluded days after it): the work of Next is bounded whatever the
// calendar, and a rare calendar's next fire is found in a few steps.
const maxCalendarSteps = 10_000

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

	// never: every weekday base fires on is excluded (see cronWeekdays).
	never bool

	mu      sync.Mutex
	counted int       // fires counted from start towards the limit
	last    time.Time // the counted-th fire from start (zero: none yet)
	done    bool      // the walk has ended: last is the limit's last fire, or the window's
}

// newCalendarSchedule applies c's calendar to base.
func newCalendarSchedule(c Config, base cron.Schedule, loc *time.Location) *calendarSchedule {
	x, _ := parseExclude(c.Exclude)
	if e, ok := base.(everySchedule); ok && !c.Start.IsZero() {
		e.phase = c.Start // a period counted from the job's start
		base = e
	}
	return &calendarSchedule{base: base, loc: loc, start: c.Start, end: c.End, pausedUntil: c.PausedUntil,
		exclude: x, never: keptWeekdays(base, x) == nil, limit: c.Limit, jitter: c.Jitter, job: c.Name}
}

// keptWeekdays names the weekdays base fires on that x does not exclude.
func keptWeekdays(base cron.Schedule, x excludedDays) []string {
	fires := cronWeekdays(base)
	var kept []string
	for d := range 7 {
		if fires[d] && !x.weekdays[d] {
			kept = append(kept, shortWeekday(time.Weekday(d)))
		}
	}
	return kept
}

// Next returns the first fire after t, or zero if there is none (or none
// within ScheduleHorizonYears: see next).
func (s *calendarSchedule) Next(t time.Time) time.Time {
	n, _ := s.next(t)
	return n
}

// next returns the first fire after t, or zero and ErrScheduleEnded when
// the calendar has no fire after t, or ErrNoFireWithinHorizon when none
// was found within the bounded search.
func (s *calendarSchedule) next(t time.Time) (time.Time, error) {
	if s.jitter <= 0 {
		return s.search(t)
	}
	// A fire's delay is less than jitter, so the first fire after t comes
	// from a nominal fire after t-jitter; delays never reorder fires (see
	// delay), and a fire whose next nominal fire is at or before t is
	// delayed to before it, so the search may begin at any time back from
	// which a nominal fire follows by t: found by doubling from a
	// millisecond, not by walking every fire of the jitter's span.
	from := t.Add(-s.jitter)
	for back := time.Millisecond; back < s.jitter; back *= 2 {
		if n, _ := s.search(t.Add(-back)); !n.IsZero() && !n.After(t) {
			from = t.Add(-back)
			break
		}
	}
	n, err := s.search(from)
	for ; !n.IsZero(); n, err = s.search(n) {
		if at := n.Add(s.delay(n)); at.After(t) {
			return at, nil
		}
	}
	return time.Time{}, err
}

// delay is the jitter of the nominal fire n: derived from the job's name
// and n, so that every instance computes the same, less than jitter, less
// than half the time to the next nominal fire, so that fires keep their
// order, and less than the time to end, so that no fire moves past it (a
// fire at end is not delayed).
func (s *calendarSchedule) delay(n time.Time) time.Duration {
	h := fnv.New64a()
	h.Write([]byte(s.job))
	h.Write([]byte(strconv.FormatInt(n.UnixMilli(), 10)))
	bound := s.jitter
	if after := s.nextNominal(n); !after.IsZero() {
		bound = min(bound, after.Sub(n)/2)
	}
	if !s.end.IsZero() {
		bound = min(bound, s.end.Sub(n))
	}
	if bound < time.Millisecond {
		return 0
	}
	// Whole milliseconds: fire times are kept in milliseconds.
	return time.Duration(h.Sum64()%uint64(bound/time.Millisecond)) * time.Millisecond
}

// nextNominal is the first fire of base after t that the calendar keeps,
// before jitter; zero if there is none (see search).
func (s *calendarSchedule) nextNominal(t time.Time) time.Time {
	n, _ := s.search(t)
	return n
}

// search is the first fire of base after t that the calendar keeps,
// before jitter, found in bounded work: at most maxCalendarSteps fires of
// base, none further than ScheduleHorizonYears after t. Each fire on an
// excluded day skips that day and every excluded day after it at once,
// and the cron itself skips the months and years it does not fire in, so
// a calendar that fires rarely costs a step per excluded fire day, never
// a step per day. It returns ErrScheduleEnded when the calendar has no
// fire after t (the window or the limit ends first, or every weekday is
// excluded), and ErrNoFireWithinHorizon when the bound is reached first.
func (s *calendarSchedule) search(t time.Time) (time.Time, error) {
	n, err := s.searchFree(t, true)
	if err != nil || s.limit <= 0 || s.start.IsZero() {
		return n, err
	}
	if !s.withinLimit(n) {
		return time.Time{}, ErrScheduleEnded
	}
	return n, nil
}

// searchFree is search without the limit, and without the pause unless
// paused (the limit counts the fires from start, paused or not).
func (s *calendarSchedule) searchFree(t time.Time, paused bool) (time.Time, error) {
	if !s.start.IsZero() && t.Before(s.start) {
		t = s.start.Add(-time.Nanosecond)
	}
	if paused && !s.pausedUntil.IsZero() && t.Before(s.pausedUntil) {
		t = s.pausedUntil.Add(-time.Nanosecond)
	}
	if s.never {
		return time.Time{}, ErrScheduleEnded
	}
	horizon := t.AddDate(ScheduleHorizonYears, 0, 0)
	ended := func(n time.Time) bool { return !s.end.IsZero() && n.After(s.end) }
	for range maxCalendarSteps {
		n := s.base.Next(t)
		if n.IsZero() {
			if specOf(s.base) == nil {
				return time.Time{}, ErrScheduleEnded
			}
			// A cron gives up after five years without a fire (a 29
			// February across 2100): it has looked through them, so look
			// on from the last of them.
			t = time.Date(t.In(s.loc).Year()+5, time.January, 1, 0, 0, 0, 0, s.loc).Add(-time.Nanosecond)
			switch {
			case ended(t):
				return time.Time{}, ErrScheduleEnded
			case t.After(horizon):
				return time.Time{}, ErrNoFireWithinHorizon
			}
			continue
		}
		switch {
		case ended(n):
			return time.Time{}, ErrScheduleEnded
		case n.After(horizon):
			return time.Time{}, ErrNoFireWithinHorizon
		}
		if s.exclude.isZero() {
			return n, nil
		}
		local := n.In(s.loc)
		if !s.exclude.excludes(local) {
			return n, nil
		}
		// Skip the rest of the excluded day, and the excluded days after
		// it, at once (at most six weekdays and the dates listed).
		y, m, d := local.Date()
		d++
		for range maxExcludeEntries + 7 {
			if !s.exclude.excludes(time.Date(y, m, d, 12, 0, 0, 0, s.loc)) {
				break
			}
			d++
		}
		t = time.Date(y, m, d, 0, 0, 0, 0, s.loc).Add(-time.Nanosecond)
	}
	return time.Time{}, ErrNoFireWithinHorizon
}

// withinLimit reports whether the fire n (one the calendar keeps, limit
// aside) is among the first limit fires from start. The fires from start
// are counted as far as the times asked need, once: the walk goes on
// where the last question left it.
func (s *calendarSchedule) withinLimit(n time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for !s.done && s.counted < s.limit && (s.last.IsZero() || s.last.Before(n)) {
		from := s.start.Add(-time.Nanosecond)
		if !s.last.IsZero() {
			from = s.last
		}
		f, err := s.searchFree(from, false)
		if err != nil {
			// The window ends first, or the fires are beyond the search's
			// reach: nothing the limit needs to stop.
			s.done = errors.Is(err, ErrScheduleEnded)
			return !s.done || s.last.IsZero() || !n.After(s.last)
		}
		s.counted++
		s.last = f
	}
	return s.counted < s.limit || !n.After(s.last)
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
	cs, ok := sched.(*calendarSchedule)
	if !ok {
		// A cron alone, searched as a calendar (which looks past the
		// cron's own five years without a fire).
		cs = newCalendarSchedule(Config{Name: c.Name}, sched, loc)
	}
	return cs.next(t)
}

// everySchedule is "@every <period>": fires a whole number of periods
// after its phase — the job's start when it has one, else the Unix epoch —
// so that every instance fires at the same times whenever it started (a
// cron.ConstantDelaySchedule counts from the time it is first asked, the
// instance's start).
type everySchedule struct {
	period time.Duration
	phase  time.Time // zero: the Unix epoch
}

// Next returns the first fire after t.
func (e everySchedule) Next(t time.Time) time.Time {
	phase := e.phase
	if phase.IsZero() {
		phase = time.Unix(0, 0)
	}
	d := t.Sub(phase)
	k := d / e.period
	if d < 0 && d%e.period != 0 {
		k-- // floor, not truncation, before the phase
	}
	return phase.Add((k + 1) * e.period).In(t.Location())
}

// specOf returns the cron spec behind a schedule parseCron made, or nil
// for a constant delay ("@every").
func specOf(s cron.Schedule) *cron.SpecSchedule {
	switch v := s.(type) {
	case *cron.SpecSchedule:
		return v
	case onceAtRepeatedTimes:
		return v.SpecSchedule
	case interface{ Unwrap() cron.Schedule }: // a wrapper, as tests count calls with
		return specOf(v.Unwrap())
	}
	return nil
}

// cronStarBit is robfig/cron's mark of a day field written "*" or "?".
const cronStarBit = 1 << 63

// cronWeekdays returns the weekdays on which base fires over the years, in
// its zone: the calendar repeats every 400 years, and every date of a
// month (29 February too) falls on every weekday within them. A cron with
// both day fields restricted fires on either (robfig/cron's rule), so on
// every weekday when its days of the month name a real date; with one
// field "*" it fires where both match, so on the days of the week it
// names. A constant delay ("@every") may fire on any.
func cronWeekdays(base cron.Schedule) (wd [7]bool) {
	all := [7]bool{true, true, true, true, true, true, true}
	spec := specOf(base)
	if spec == nil || spec.Dow&cronStarBit != 0 {
		return all
	}
	for d := range 7 {
		wd[d] = spec.Dow&(1<<uint(d)) != 0
	}
	if spec.Dom&cronStarBit != 0 {
		return wd
	}
	longest := [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
	for m := 1; m <= 12; m++ {
		if spec.Month&(1<<uint(m)) == 0 {
			continue
		}
		for day := 1; day <= longest[m]; day++ {
			if spec.Dom&(1<<uint(day)) != 0 {
				return all
			}
		}
	}
	return wd
}

// neverFires reports why the calendar of c leaves base no fire at all, or
// "" when it may fire, and the key to blame: every weekday base fires on
// excluded, or no fire between start and end. It depends on the config
// alone, never on the time: a config it passes stays valid for ever.
func (c Config) neverFires(base cron.Schedule, loc *time.Location) (key, why string) {
	x, problems := parseExclude(c.Exclude)
	if len(problems) > 0 {
		return "", ""
	}
	fires := cronWeekdays(base)
	var names []string
	for d := range 7 {
		if fires[d] {
			names = append(names, shortWeekday(time.Weekday(d)))
		}
	}
	kept := keptWeekdays(base, x)
	if len(kept) == 0 {
		if len(names) == 7 {
			return "exclude", "excludes all seven weekdays: the job would never fire"
		}
		return "exclude", fmt.Sprintf("excludes every weekday the cron fires on (%s): the job would never fire", strings.Join(names, ", "))
	}
	if c.Start.IsZero() || c.End.IsZero() || c.End.Before(c.Start) {
		return "", ""
	}
	window := &calendarSchedule{base: base, loc: loc, start: c.Start, end: c.End, exclude: x}
	if _, err := window.search(c.Start.Add(-time.Nanosecond)); errors.Is(err, ErrScheduleEnded) {
		return "end", "leaves no fire of the cron between start and end on a day not excluded: the job would never fire"
	}
	return "", ""
}

// shortWeekday is the three-letter name Exclude accepts for d.
func shortWeekday(d time.Weekday) string { return strings.ToLower(d.String()[:3]) }

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
		if key, why := c.neverFires(base, loc); key != "" {
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
