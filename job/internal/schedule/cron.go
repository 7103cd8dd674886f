package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// parser reads a job's cron: six fields, seconds first, or a descriptor
// such as "@hourly" or "@every 5m".
var parser = cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// CronError is why a cron does not parse: the detail of the problem, a
// hint at the fix ("" if none), and the parser's error it comes from (nil
// if none). Package job makes it a config error on the key "cron".
type CronError struct {
	Detail string
	Hint   string
	Cause  error
}

// ParseCron parses a non-empty spec and applies loc to it. "@every" takes
// a whole number of seconds, at least minEvery, and fires on the same times
// on every instance (an Every); a cron at set hours fires once when clocks
// fall back. A spec with a field that matches nothing is refused: the
// parser would look five years for its first fire, a second at a time.
func ParseCron(spec string, loc *time.Location, minEvery time.Duration) (sched cron.Schedule, cerr *CronError) {
	bad := func(detail, hint string, cause error) *CronError {
		return &CronError{Detail: detail, Hint: hint, Cause: cause}
	}
	s := strings.TrimSpace(spec)
	if strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ=") {
		return nil, bad("time zone prefixes are not supported", "set timeZone instead", nil)
	}
	defer func() { // the parser has panicked on odd input in the past
		if r := recover(); r != nil {
			sched, cerr = nil, bad(fmt.Sprint(r), "", nil)
		}
	}()
	parsed, err := parser.Parse(s)
	if err != nil {
		hint := ""
		if !strings.HasPrefix(s, "@") && len(strings.Fields(s)) == 5 {
			hint = `six fields are needed, seconds first: "0 */5 * * * *" fires every five minutes`
		}
		return nil, bad(err.Error(), hint, err)
	}
	if every, ok := strings.CutPrefix(s, "@every "); ok {
		// cron.Every silently rounds up to 1s and truncates fractions.
		d, _ := time.ParseDuration(strings.TrimSpace(every))
		if d < minEvery || d%time.Second != 0 {
			return nil, bad(fmt.Sprintf("the period must be a whole number of seconds, at least %v", minEvery), "", nil)
		}
		return Every{Period: d}, nil
	}
	if spec, ok := parsed.(*cron.SpecSchedule); ok {
		if field := emptyCronField(spec); field != "" {
			// Searching for a fire would take seconds of CPU (the
			// parser's Next walks five years a second at a time).
			return nil, bad("never fires: its "+field+" field matches no value", "", nil)
		}
		spec.Location = loc
		if spec.Hour&allHours != allHours {
			// A job at set hours fires once when clocks fall back.
			return onceAtRepeatedTimes{spec}, nil
		}
	}
	return parsed, nil
}

// emptyCronField names the first field of spec that matches no value in
// its range (a list of nothing, such as ", * * * * *"), or "".
func emptyCronField(spec *cron.SpecSchedule) string {
	for _, f := range []struct {
		name     string
		bits     uint64
		min, max uint
	}{
		{"seconds", spec.Second, 0, 59}, {"minutes", spec.Minute, 0, 59}, {"hours", spec.Hour, 0, 23},
		{"day-of-month", spec.Dom, 1, 31}, {"month", spec.Month, 1, 12}, {"day-of-week", spec.Dow, 0, 6},
	} {
		if f.bits&(1<<(f.max+1)-1)&^(1<<f.min-1) == 0 {
			return f.name
		}
	}
	return ""
}

// allHours is the hour bitmask of a cron whose hour field is "*".
const allHours = 1<<24 - 1

// onceAtRepeatedTimes skips the second occurrence of a wall-clock time that
// happens twice when daylight saving time ends, as cron daemons do for jobs
// at set hours: "0 30 1 * * *" in America/New_York fires once on the night
// clocks go back, at the first 01:30. Jobs whose hour field is "*" keep every
// fire of the repeated hour: skipping would leave an hour with none.
type onceAtRepeatedTimes struct{ *cron.SpecSchedule }

// Next returns the next fire after t.
func (s onceAtRepeatedTimes) Next(t time.Time) time.Time {
	for i := 0; i < 4; i++ {
		n := s.SpecSchedule.Next(t)
		if n.IsZero() || !repeatedWallClock(n) {
			return n
		}
		t = n
	}
	return s.SpecSchedule.Next(t)
}

// repeatedWallClock reports whether the same wall-clock time already
// happened shortly before t (the zone's offset went back in between).
func repeatedWallClock(t time.Time) bool {
	y, mo, d := t.Date()
	h, mi, sec := t.Clock()
	for _, back := range []time.Duration{30 * time.Minute, time.Hour, 2 * time.Hour} {
		e := t.Add(-back)
		ey, emo, ed := e.Date()
		eh, emi, esec := e.Clock()
		if ey == y && emo == mo && ed == d && eh == h && emi == mi && esec == sec {
			return true
		}
	}
	return false
}

// Every is "@every <period>": fires a whole number of periods after its
// phase — the job's start when it has one, else the Unix epoch — so that
// every instance fires at the same times whenever it started (a
// cron.ConstantDelaySchedule counts from the time it is first asked, the
// instance's start).
type Every struct {
	Period time.Duration
	Phase  time.Time // zero: the Unix epoch
}

// Next returns the first fire after t.
func (e Every) Next(t time.Time) time.Time {
	phase := e.Phase
	if phase.IsZero() {
		phase = time.Unix(0, 0)
	}
	d := t.Sub(phase)
	k := d / e.Period
	if d < 0 && d%e.Period != 0 {
		k-- // floor, not truncation, before the phase
	}
	return phase.Add((k + 1) * e.Period).In(t.Location())
}

// specOf returns the cron spec behind a schedule ParseCron made, or nil
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
