package job

import (
	"errors"
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

// countedCalendar is c's calendar schedule over a cron that counts its
// calls. The config is not validated: the registry, or an older version,
// may hold what Validate now refuses.
func countedCalendar(t *testing.T, c Config) (*calendarSchedule, *int) {
	t.Helper()
	base, err := parseCron(c.Cron, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	calls := new(int)
	return newCalendarSchedule(c, countedSchedule{base, calls}, time.UTC), calls
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
		cfg      Config
		want     time.Time // zero: no fire
		maxCalls int
	}{
		{"every weekday excluded", Config{Cron: "0 0 0 1 1 *", Exclude: "mon,tue,wed,thu,fri,sat,sun"}, time.Time{}, 10},
		{"the cron's only weekday excluded", Config{Cron: "0 0 9 * * mon", Exclude: "mon"}, time.Time{}, 10},
		{"yearly on Fridays only", Config{Cron: "0 0 0 1 1 *", Exclude: "sat,sun,mon,tue,wed,thu"},
			time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), 10},
		{"monthly on the 13th, Fridays only", Config{Cron: "0 0 0 13 * *", Exclude: "sat,sun,mon,tue,wed,thu"},
			time.Date(2026, 11, 13, 0, 0, 0, 0, time.UTC), 20},
		{"a limit of 100,000 yearly fires", Config{Cron: "0 0 0 1 1 *", Start: start, Limit: MaxLimit},
			time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), 10},
		{"an hour's jitter on a job every second", Config{Name: "j", Cron: "* * * * * *", Jitter: time.Hour},
			time.Time{}, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, calls := countedCalendar(t, tc.cfg)
			n := s.Next(from)
			if *calls > tc.maxCalls {
				t.Errorf("Next made %d calls to the cron, want at most %d", *calls, tc.maxCalls)
			}
			if tc.cfg.Jitter > 0 {
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
// than ScheduleHorizonYears says so, after bounded work, instead of
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
	s, calls := countedCalendar(t, Config{Cron: "0 0 0 1 1 *", Exclude: excl})
	n, err := s.next(from)
	if !n.IsZero() || !errors.Is(err, ErrNoFireWithinHorizon) {
		t.Fatalf("next: %v, %v; want none, ErrNoFireWithinHorizon", n, err)
	}
	if *calls > 2*ScheduleHorizonYears {
		t.Errorf("%d calls to the cron, want at most %d", *calls, 2*ScheduleHorizonYears)
	}

	ended, _ := countedCalendar(t, Config{Cron: "0 0 0 1 1 *", End: from})
	if n, err := ended.next(from); !n.IsZero() || !errors.Is(err, ErrScheduleEnded) {
		t.Fatalf("past its end: %v, %v; want none, ErrScheduleEnded", n, err)
	}
}

// TestCalendarLooksPastTheCronsFiveYears: robfig/cron gives up after five
// years without a fire; 29 February skips 2100, eight years.
func TestCalendarLooksPastTheCronsFiveYears(t *testing.T) {
	c := Config{Name: "leap", Cron: "0 0 0 29 2 *", TimeZone: "UTC", ShardingTotalCount: 1}
	n, err := c.NextFireAfter(time.Date(2096, 3, 1, 0, 0, 0, 0, time.UTC))
	if want := time.Date(2104, 2, 29, 0, 0, 0, 0, time.UTC); err != nil || !n.Equal(want) {
		t.Fatalf("next fire after 2096-03-01: %v, %v; want %v", n, err, want)
	}
}
