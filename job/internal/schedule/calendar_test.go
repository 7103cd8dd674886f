package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

// countedSchedule counts the calls a calendar makes to its cron.
type countedSchedule struct {
	cron.Schedule
	calls *int
}

func (c countedSchedule) Next(t time.Time) time.Time { *c.calls++; return c.Schedule.Next(t) }
func (c countedSchedule) Unwrap() cron.Schedule      { return c.Schedule }

// countedCalendar is c applied to spec, over a cron that counts its
// calls. Nothing is validated: the registry, or an older version, may
// hold what Validate now refuses.
func countedCalendar(t *testing.T, spec string, c Calendar) (*CalendarSchedule, *int) {
	t.Helper()
	base, err := ParseCron(spec, time.UTC, time.Second)
	if err != nil {
		t.Fatal(err.Detail)
	}
	calls := new(int)
	return Apply(countedSchedule{base, calls}, time.UTC, c), calls
}

// TestCalendarNextIsBoundedWork: the next fire of a calendar costs a few
// calls to its cron whatever the calendar — one that never fires, one
// whose limit counts from far back, one with a long jitter — instead of
// a scan of up to 100,000 excluded days (50 such jobs cost GET /jobs 7–8 s
// of CPU).
func TestCalendarNextIsBoundedWork(t *testing.T) {
	from := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name     string
		spec     string
		cal      Calendar
		want     time.Time // zero: no fire
		maxCalls int
	}{
		{"every weekday excluded", "0 0 0 1 1 *", Calendar{Exclude: "mon,tue,wed,thu,fri,sat,sun"}, time.Time{}, 10},
		{"the cron's only weekday excluded", "0 0 9 * * mon", Calendar{Exclude: "mon"}, time.Time{}, 10},
		{"yearly on Fridays only", "0 0 0 1 1 *", Calendar{Exclude: "sat,sun,mon,tue,wed,thu"},
			time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), 10},
		{"monthly on the 13th, Fridays only", "0 0 0 13 * *", Calendar{Exclude: "sat,sun,mon,tue,wed,thu"},
			time.Date(2026, 11, 13, 0, 0, 0, 0, time.UTC), 20},
		{"a limit of 100,000 yearly fires", "0 0 0 1 1 *", Calendar{Start: start, Limit: 100_000},
			time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), 10},
		{"an hour's jitter on a job every second", "* * * * * *", Calendar{Name: "j", Jitter: time.Hour},
			time.Time{}, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, calls := countedCalendar(t, tc.spec, tc.cal)
			n := s.Next(from)
			if *calls > tc.maxCalls {
				t.Errorf("Next made %d calls to the cron, want at most %d", *calls, tc.maxCalls)
			}
			if tc.cal.Jitter > 0 {
				if n.Before(from) || n.After(from.Add(time.Second)) {
					t.Errorf("next fire %v, want within a second after %v", n, from)
				}
				return
			}
			if !n.Equal(tc.want) {
				t.Errorf("next fire %v, want %v", n, tc.want)
			}
		})
	}
}

// TestCalendarNoFireWithinHorizon: a calendar whose next fire is further
// than HorizonYears says so, after bounded work, instead of
// searching on; one that has ended says that.
func TestCalendarNoFireWithinHorizon(t *testing.T) {
	from := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	// Yearly on 1 January when it is a Friday, with every such day of the
	// next 150 years excluded as a date.
	excl := "sat,sun,mon,tue,wed,thu"
	for y := 2027; y < 2027+150; y++ {
		if d := time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC); d.Weekday() == time.Friday {
			excl += "," + d.Format(time.DateOnly)
		}
	}
	s, calls := countedCalendar(t, "0 0 0 1 1 *", Calendar{Exclude: excl})
	n, err := s.FireAfter(from)
	if !n.IsZero() || !errors.Is(err, ErrNoFireWithinHorizon) {
		t.Fatalf("next: %v, %v; want none, ErrNoFireWithinHorizon", n, err)
	}
	if *calls > 2*HorizonYears {
		t.Errorf("%d calls to the cron, want at most %d", *calls, 2*HorizonYears)
	}

	ended, _ := countedCalendar(t, "0 0 0 1 1 *", Calendar{End: from})
	if n, err := ended.FireAfter(from); !n.IsZero() || !errors.Is(err, ErrEnded) {
		t.Fatalf("past its end: %v, %v; want none, ErrEnded", n, err)
	}
}

func TestNeverFires(t *testing.T) {
	y27 := func(m time.Month, d int) time.Time { return time.Date(2027, m, d, 0, 0, 0, 0, time.UTC) }
	for _, tc := range []struct {
		spec string
		cal  Calendar
		key  string // "": it may fire
		why  string
	}{
		{"0 0 9 * * *", Calendar{}, "", ""},
		{"0 0 9 * * *", Calendar{Exclude: "sat,sun"}, "", ""},
		{"0 0 9 * * *", Calendar{Exclude: "mon,tue,wed,thu,fri,sat,sun"}, "exclude", "excludes all seven weekdays"},
		{"0 0 9 * * sat,sun", Calendar{Exclude: "sat,sun"}, "exclude", "excludes every weekday the cron fires on (sun, sat)"},
		{"0 0 0 13 * *", Calendar{Exclude: "sat,sun,mon,tue,wed,thu"}, "", ""}, // Friday the 13th comes
		{"0 0 9 * * *", Calendar{Exclude: "bad"}, "", ""},                      // ParseExclude's to report
		{"0 0 9 * * *", Calendar{Start: y27(3, 1), End: y27(3, 2)}, "", ""},
		{"0 0 9 * * *", Calendar{Start: y27(3, 6), End: y27(3, 8), Exclude: "sat,sun"}, "end", "leaves no fire of the cron between start and end"},
		{"0 0 9 * * *", Calendar{Start: y27(3, 2), End: y27(3, 1)}, "", ""}, // end before start: Validate's
		// A period counts from the start, as the schedule fires it: "@every
		// 1h" from 10:30 fires at 10:30, within a window to 10:45.
		{"@every 1h", Calendar{Start: y27(3, 1).Add(10*time.Hour + 30*time.Minute), End: y27(3, 1).Add(10*time.Hour + 45*time.Minute)}, "", ""},
		{"@every 1h", Calendar{Start: y27(3, 1).Add(10*time.Hour + 30*time.Minute), End: y27(3, 1).Add(10*time.Hour + 31*time.Minute), Exclude: "mon"}, "end", "leaves no fire"},
	} {
		base, err := ParseCron(tc.spec, time.UTC, time.Second)
		if err != nil {
			t.Fatal(err.Detail)
		}
		key, why := NeverFires(base, time.UTC, tc.cal)
		if key != tc.key || !strings.Contains(why, tc.why) || (tc.why == "" && why != "") {
			t.Errorf("%q with %+v: %q, %q; want %q, %q", tc.spec, tc.cal, key, why, tc.key, tc.why)
		}
	}
}
