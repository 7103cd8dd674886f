package job_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job"
)

// TestAddRefusesAnEndedSchedule: Validate accepts an end in the past and a
// used-up limit (it does not look at the clock), but a scheduler does not
// take on a job that will never fire: Add says which field ended it.
func TestAddRefusesAnEndedSchedule(t *testing.T) {
	now := time.Date(2027, 1, 10, 12, 0, 0, 0, time.UTC)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, s := connect(t, ctx, namespace(t), "s1", job.WithClockForTest(func() time.Time { return now }))
	defer rc.Close()
	jan := func(d int) time.Time { return time.Date(2027, 1, d, 0, 0, 0, 0, time.UTC) }
	base := job.Config{Cron: "0 0 0 * * *", TimeZone: "UTC", ShardingTotalCount: 1}
	for _, tc := range []struct {
		name  string
		mod   func(*job.Config)
		field string // "" when Add must accept it
	}{
		{"end passed", func(c *job.Config) { c.End = jan(1) }, "end 2027-01-01T00:00:00Z: leaves no fire after 2027-01-10T12:00:00Z"},
		{"limit used up", func(c *job.Config) { c.Start, c.Limit = jan(1), 3 }, "limit 3: is used up"},
		{"paused past the end", func(c *job.Config) { c.End, c.PausedUntil = jan(20), jan(21) }, "pausedUntil 2027-01-21T00:00:00Z"},
		{"end ahead", func(c *job.Config) { c.End = jan(20) }, ""},
		{"limit left", func(c *job.Config) { c.Start, c.Limit = jan(1), 30 }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			c.Name = strings.ReplaceAll(tc.name, " ", "-")
			tc.mod(&c)
			if err := c.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			err := s.Add(ctx, c, job.SimpleFunc(func(context.Context, job.ShardingContext) error { return nil }))
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Add: %v", err)
				}
				return
			}
			if !errors.Is(err, job.ErrScheduleEnded) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Add: %v\nwant ErrScheduleEnded containing %q", err, tc.field)
			}
			if n, err := c.NextFireAfter(now); !n.IsZero() || !errors.Is(err, job.ErrScheduleEnded) {
				t.Fatalf("NextFireAfter: %v, %v; want none, ErrScheduleEnded", n, err)
			}
		})
	}
}

// TestEndedScheduleIsLoggedOnce: a running job whose schedule ends — its
// limit's last fire dispatched, or a reload to a config whose end has
// passed — says so once in its log, instead of nothing.
func TestEndedScheduleIsLoggedOnce(t *testing.T) {
	const ended = "schedule ended: no further fires"
	waitLog := func(t *testing.T, lc *logCapture, n int) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for lc.count(ended) < n {
			if time.Now().After(deadline) {
				t.Fatalf("%q logged %d times, want %d", ended, lc.count(ended), n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Run("limit", func(t *testing.T) {
		rec := newRecorder()
		lc := &logCapture{next: testLogger(t).Handler()}
		start := time.Now().Truncate(time.Second).Add(time.Second)
		cfg := job.Config{Name: "limited", Cron: "* * * * * *", ShardingTotalCount: 1, Start: start, Limit: 2}
		in := startInstance(t, namespace(t), "s1", cfg, rec, job.WithLogger(slog.New(lc)))
		rec.waitFires(t, start.Add(-time.Millisecond), 2, 1, 20*time.Second)
		waitLog(t, lc, 1)
		in.stop(t)
		if n := lc.count(ended); n != 1 {
			t.Fatalf("%q logged %d times, want once", ended, n)
		}
	})
	t.Run("reload", func(t *testing.T) {
		rec := newRecorder()
		lc := &logCapture{next: testLogger(t).Handler()}
		ns := namespace(t)
		cfg := job.Config{Name: "reloaded", Cron: "*/2 * * * * *", ShardingTotalCount: 1}
		in := startInstance(t, ns, "s1", cfg, rec, job.WithLogger(slog.New(lc)))
		cfg.End = time.Now().Add(-time.Minute).Truncate(time.Second)
		doc, err := cfg.Encode()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := in.rc.Set(ctx, layout.Job(cfg.Name).Config(), doc, -1); err != nil {
			t.Fatal(err)
		}
		waitLog(t, lc, 1)
		if n := lc.count(ended, "end "); n != 1 {
			t.Fatalf("the line does not name end: %q", lc.lines)
		}
		in.stop(t)
		if n := lc.count(ended); n != 1 {
			t.Fatalf("%q logged %d times, want once", ended, n)
		}
	})
}
