package job_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
)

// TestValidateRefusesCalendarsThatNeverFire: a calendar that leaves its
// cron no fire is refused, naming the field, whatever the time; one that
// fires rarely is accepted.
func TestValidateRefusesCalendarsThatNeverFire(t *testing.T) {
	base := job.Config{Name: "cal", ShardingTotalCount: 1, TimeZone: "Europe/Berlin"}
	y27 := func(m time.Month, d int) time.Time { return time.Date(2027, m, d, 0, 0, 0, 0, time.UTC) }
	refused := []struct {
		name, cron, exclude string
		start, end          time.Time
		want                string
	}{
		{"every weekday", "0 0 0 1 1 *", "mon,tue,wed,thu,fri,sat,sun", time.Time{}, time.Time{},
			`exclude "mon,tue,wed,thu,fri,sat,sun": excludes all seven weekdays`},
		{"every weekday, spelled out", "* * * * * *", "Sunday,monday,tues,wed,thurs,fri,sat", time.Time{}, time.Time{},
			"excludes all seven weekdays"},
		{"the cron's weekdays", "0 0 9 * * mon-fri", "mon,tue,wed,thu,fri", time.Time{}, time.Time{},
			"excludes every weekday the cron fires on (mon, tue, wed, thu, fri)"},
		{"the cron's weekday, a date listed too", "0 30 8 * 6 sat", "sat,2027-06-05", time.Time{}, time.Time{},
			"excludes every weekday the cron fires on (sat)"},
		{"no fire in the window", "0 0 0 1 1 *", "", y27(2, 1), y27(12, 31),
			"end 2027-12-31T00:00:00Z: leaves no fire of the cron between start and end"},
		{"the window's fires excluded", "0 0 12 * * *", "2027-03-01,2027-03-02", y27(3, 1), y27(3, 2).Add(23 * time.Hour),
			"leaves no fire of the cron between start and end"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			c.Cron, c.Exclude, c.Start, c.End = tc.cron, tc.exclude, tc.start, tc.end
			err := c.Validate()
			if !errors.Is(err, job.ErrInvalidConfig) || !errors.Is(err, job.ErrNeverFires) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate: %v\nwant ErrNeverFires containing %q", err, tc.want)
			}
		})
	}
	accepted := []struct{ name, cron, exclude string }{
		{"yearly, on Fridays only", "0 0 0 1 1 *", "sat,sun,mon,tue,wed,thu"},
		{"29 February, on Mondays only", "0 0 0 29 2 *", "sun,tue,wed,thu,fri,sat"},
		// Both day fields restricted: either matches (1 January, or any
		// Monday in January).
		{"1 January or a Monday, Mondays excluded", "0 0 0 1 1 mon", "mon"},
		// A period of whole weeks may keep one weekday, or drift with the
		// zone's offset: not refused.
		{"every week, six weekdays excluded", "@every 168h", "sun,mon,tue,wed,thu,fri"},
	}
	for _, tc := range accepted {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			c.Cron, c.Exclude = tc.cron, tc.exclude
			if err := c.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
		})
	}
	// A period counts from the job's start, as its fires do: "@every 1h"
	// from 10:30 fires at 10:30, inside a window that ends at 10:45.
	t.Run("a period from its start, within a short window", func(t *testing.T) {
		c := base
		c.Cron, c.TimeZone = "@every 1h", "UTC"
		c.Start = y27(3, 1).Add(10*time.Hour + 30*time.Minute)
		c.End = c.Start.Add(15 * time.Minute)
		if err := c.Validate(); err != nil {
			t.Fatalf("Validate: %v", err)
		}
	})
}
