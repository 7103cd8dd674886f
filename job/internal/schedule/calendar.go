package schedule

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

// HorizonYears bounds how far ahead a calendar's next fire is searched:
// a calendar whose next fire is further away than that reports
// ErrNoFireWithinHorizon instead of searching on.
const HorizonYears = 100

// maxCalendarSteps bounds the fires of the cron one search for a
// calendar's next fire looks at (each an excluded day, skipped with the
// excluded days after it): the work of Next is bounded whatever the
// calendar, and a rare calendar's next fire is found in a few steps.
const maxCalendarSteps = 10_000

// The errors of a search for a calendar's next fire; package job reports
// them as its own (job.ErrScheduleEnded, job.ErrNoFireWithinHorizon).
var (
	// ErrEnded means the calendar has no fire after the time asked: its
	// end has passed, its limit is used up, or it excludes every weekday
	// its cron fires on.
	ErrEnded = errors.New("schedule: ended: no further fires")
	// ErrNoFireWithinHorizon means no fire was found within HorizonYears
	// (or within the bounded work one search may do).
	ErrNoFireWithinHorizon = errors.New("schedule: no fire within the horizon")
)

// Calendar is what narrows or shifts the fires of a job's cron, as plain
// values: a window (Start, End), a pause until a time (PausedUntil), a
// limit on the number of fires counted from Start (Limit), the days
// excluded (Exclude, as ParseExclude reads it), and a delay per fire below
// Jitter, derived from the job's Name. A zero field narrows nothing.
type Calendar struct {
	Name        string
	Start, End  time.Time
	PausedUntil time.Time
	Limit       int
	Exclude     string
	Jitter      time.Duration
}

// CalendarSchedule is a job's cron schedule with its calendar applied. The
// fires of the cron that fall before start or pausedUntil, after end, on
// an excluded day, or after the limit-th fire from start, are left out;
// each fire left is then delayed by its jitter. Next returns the delayed
// times: they are the fires' times everywhere (the fire's identity, its
// records, what a make-up run covers). It is safe for concurrent use.
type CalendarSchedule struct {
	base        cron.Schedule
	loc         *time.Location
	start, end  time.Time
	pausedUntil time.Time
	exclude     Days
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

// Apply applies c to base, a schedule ParseCron made in loc (or one
// wrapping it with an Unwrap method). An Exclude that does not parse
// excludes what it names validly; a period ("@every") counts from Start
// when there is one.
func Apply(base cron.Schedule, loc *time.Location, c Calendar) *CalendarSchedule {
	x, _ := ParseExclude(c.Exclude)
	if e, ok := base.(Every); ok && !c.Start.IsZero() {
		e.Phase = c.Start // a period counted from the job's start
		base = e
	}
	return &CalendarSchedule{base: base, loc: loc, start: c.Start, end: c.End, pausedUntil: c.PausedUntil,
		exclude: x, never: keptWeekdays(base, x) == nil, limit: c.Limit, jitter: c.Jitter, job: c.Name}
}

// Jitter is the bound of the calendar's delay per fire (0: none).
func (s *CalendarSchedule) Jitter() time.Duration { return s.jitter }

// Next returns the first fire after t, or zero if there is none (or none
// within HorizonYears: see FireAfter).
func (s *CalendarSchedule) Next(t time.Time) time.Time {
	n, _ := s.FireAfter(t)
	return n
}

// FireAfter returns the first fire after t, or zero and ErrEnded when the
// calendar has no fire after t, or ErrNoFireWithinHorizon when none was
// found within the bounded search.
func (s *CalendarSchedule) FireAfter(t time.Time) (time.Time, error) {
	if s.jitter <= 0 {
		return s.search(t)
	}
	// A fire's delay is less than jitter, so the first fire after t comes
	// from a nominal fire after t-jitter; delays never reorder fires (see
	// Delay), and a fire whose next nominal fire is at or before t is
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
		if at := n.Add(s.Delay(n)); at.After(t) {
			return at, nil
		}
	}
	return time.Time{}, err
}

// Delay is the jitter of the nominal fire n: derived from the job's name
// and n, so that every instance computes the same, less than jitter, less
// than half the time to the next nominal fire, so that fires keep their
// order, and less than the time to end, so that no fire moves past it (a
// fire at end is not delayed).
func (s *CalendarSchedule) Delay(n time.Time) time.Duration {
	h := fnv.New64a()
	h.Write([]byte(s.job))
	h.Write([]byte(strconv.FormatInt(n.UnixMilli(), 10)))
	bound := s.jitter
	if after := s.NextNominal(n); !after.IsZero() {
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

// NextNominal is the first fire of the cron after t that the calendar
// keeps, before jitter; zero if there is none (see search).
func (s *CalendarSchedule) NextNominal(t time.Time) time.Time {
	n, _ := s.search(t)
	return n
}

// search is the first fire of base after t that the calendar keeps,
// before jitter, found in bounded work: at most maxCalendarSteps fires of
// base, none further than HorizonYears after t. Each fire on an excluded
// day skips that day and every excluded day after it at once, and the
// cron itself skips the months and years it does not fire in, so a
// calendar that fires rarely costs a step per excluded fire day, never a
// step per day. It returns ErrEnded when the calendar has no fire after t
// (the window or the limit ends first, or every weekday is excluded), and
// ErrNoFireWithinHorizon when the bound is reached first.
func (s *CalendarSchedule) search(t time.Time) (time.Time, error) {
	n, err := s.searchFree(t, true)
	if err != nil || s.limit <= 0 || s.start.IsZero() {
		return n, err
	}
	if !s.withinLimit(n) {
		return time.Time{}, ErrEnded
	}
	return n, nil
}

// NominalIgnoringLimit is the first fire of the cron after t within the
// window and on a day not excluded, before jitter, as if there were no
// limit and no pause: what tells a schedule whose limit is used up, or
// whose pause outlasts it, from one whose window has ended. Its errors are
// search's.
func (s *CalendarSchedule) NominalIgnoringLimit(t time.Time) (time.Time, error) {
	return s.searchFree(t, false)
}

// searchFree is search without the limit, and without the pause unless
// paused (the limit counts the fires from start, paused or not).
func (s *CalendarSchedule) searchFree(t time.Time, paused bool) (time.Time, error) {
	if !s.start.IsZero() && t.Before(s.start) {
		t = s.start.Add(-time.Nanosecond)
	}
	if paused && !s.pausedUntil.IsZero() && t.Before(s.pausedUntil) {
		t = s.pausedUntil.Add(-time.Nanosecond)
	}
	if s.never {
		return time.Time{}, ErrEnded
	}
	horizon := t.AddDate(HorizonYears, 0, 0)
	ended := func(n time.Time) bool { return !s.end.IsZero() && n.After(s.end) }
	for range maxCalendarSteps {
		n := s.base.Next(t)
		if n.IsZero() {
			if specOf(s.base) == nil {
				return time.Time{}, ErrEnded
			}
			// A cron gives up after five years without a fire (a 29
			// February across 2100): it has looked through them, so look
			// on from the last of them.
			t = time.Date(t.In(s.loc).Year()+5, time.January, 1, 0, 0, 0, 0, s.loc).Add(-time.Nanosecond)
			switch {
			case ended(t):
				return time.Time{}, ErrEnded
			case t.After(horizon):
				return time.Time{}, ErrNoFireWithinHorizon
			}
			continue
		}
		switch {
		case ended(n):
			return time.Time{}, ErrEnded
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
		for range MaxExcludeEntries + 7 {
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
func (s *CalendarSchedule) withinLimit(n time.Time) bool {
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
			s.done = errors.Is(err, ErrEnded)
			return !s.done || s.last.IsZero() || !n.After(s.last)
		}
		s.counted++
		s.last = f
	}
	return s.counted < s.limit || !n.After(s.last)
}

// NeverFires reports why c leaves base, a schedule ParseCron made in loc,
// no fire at all, or "" when it may fire, and the key of the field to
// blame ("exclude" or "end"): every weekday base fires on excluded, or no
// fire between start and end. It depends on its arguments alone, never on
// the time: a calendar it passes may fire for ever. An Exclude that does
// not parse is not judged here.
func NeverFires(base cron.Schedule, loc *time.Location, c Calendar) (key, why string) {
	x, problems := ParseExclude(c.Exclude)
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
	if e, ok := base.(Every); ok {
		e.Phase = c.Start // as Apply counts the period: from the job's start
		base = e
	}
	window := &CalendarSchedule{base: base, loc: loc, start: c.Start, end: c.End, exclude: x}
	if _, err := window.search(c.Start.Add(-time.Nanosecond)); errors.Is(err, ErrEnded) {
		return "end", "leaves no fire of the cron between start and end on a day not excluded: the job would never fire"
	}
	return "", ""
}
