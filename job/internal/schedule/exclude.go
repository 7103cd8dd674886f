package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shardjob/shardjob/internal/docsubset"
)

// MaxExcludeEntries bounds the entries of an Exclude list.
const MaxExcludeEntries = 1000

// Days are the dates and weekdays a job does not fire on, in its time
// zone.
type Days struct {
	weekdays [7]bool
	dates    map[[3]int]bool // year, month, day
}

func (x Days) isZero() bool { return len(x.dates) == 0 && x.weekdays == [7]bool{} }

// excludes reports whether t's day (in t's location) is excluded.
func (x Days) excludes(t time.Time) bool {
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

// ParseExclude parses an Exclude list: entries separated by commas, each
// a weekday ("sat", "Sunday") or a date ("2026-12-25"). It returns every
// problem, each a sentence's end that package job puts after the field.
func ParseExclude(s string) (Days, []string) {
	var x Days
	if strings.TrimSpace(s) == "" {
		return x, nil
	}
	var problems []string
	entries := strings.Split(s, ",")
	if len(entries) > MaxExcludeEntries {
		return x, []string{fmt.Sprintf("has %d entries; at most %d are accepted", len(entries), MaxExcludeEntries)}
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
			problems = append(problems, fmt.Sprintf("entry %s is neither a weekday (mon..sun) nor a date (2006-01-02)", docsubset.QuoteShort(e)))
			continue
		}
		if x.dates == nil {
			x.dates = map[[3]int]bool{}
		}
		x.dates[[3]int{d.Year(), int(d.Month()), d.Day()}] = true
	}
	return x, problems
}

// keptWeekdays names the weekdays base fires on that x does not exclude.
func keptWeekdays(base cron.Schedule, x Days) []string {
	fires := cronWeekdays(base)
	var kept []string
	for d := range 7 {
		if fires[d] && !x.weekdays[d] {
			kept = append(kept, shortWeekday(time.Weekday(d)))
		}
	}
	return kept
}

// shortWeekday is the three-letter name an Exclude list accepts for d.
func shortWeekday(d time.Weekday) string { return strings.ToLower(d.String()[:3]) }
