package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobtest"
	"github.com/shardjob/shardjob/regcenter"
)

// TestCheckExitCode runs `shardjob check` on a namespace with nothing
// wrong (exit 0), then with a job whose fire was raised late and which has
// not run since it was registered, on a clock three hours behind the
// probe's (exit 4, a line for each).
func TestCheckExitCode(t *testing.T) {
	c := &cluster{t: t, ns: newNamespace(), name: "slow"}
	code, out, errOut := c.cli("check")
	if code != 0 || !strings.Contains(out, "ok: no job late or not run") || errOut != "" {
		t.Fatalf("empty namespace: exit %d, out %q, err %q", code, out, errOut)
	}

	start := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	clk := jobtest.NewClock(start)
	late := make(chan job.Event, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, err := regcenter.Open(ctx, c.rcConfig(), regcenter.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	s, err := job.NewScheduler(rc, job.WithServerID("s1"), job.WithLogger(testLogger(t)), job.WithClock(clk),
		job.WithEventHandler(func(ev job.Event) {
			if ev.Kind == job.EventFireLate {
				late <- ev
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	cfg := job.Config{Name: "slow", Cron: "0 0 * * * *", ShardingTotalCount: 1,
		Alert: job.AlertPolicy{Late: time.Second, NotRunFor: time.Hour}}
	if err := s.Add(ctx, cfg, job.SimpleFunc(func(ctx context.Context, _ job.ShardingContext) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	in := &instance{id: "s1", rc: rc, sched: s}
	defer in.stop(t)
	defer close(release)
	clk.Set(start.Add(time.Hour)) // the fire, which runs on
	clk.Set(start.Add(time.Hour + 2*time.Second))
	select {
	case <-late:
	case <-ctx.Done():
		t.Fatal("no late fire raised")
	}
	var lines []string
	waitFor(t, 20*time.Second, "check to report both problems", func() bool {
		code, out, _ = c.cli("check", "--window", "5h")
		lines = strings.Split(strings.TrimSpace(out), "\n")
		return code == 4 && len(lines) == 2
	})
	fire := start.Add(time.Hour).Format(time.RFC3339)
	if !strings.HasPrefix(lines[0], "not-run slow: no successful run for 1h0m0s (never ran)") ||
		!strings.HasPrefix(lines[1], "late slow: fire "+fire) {
		t.Errorf("check's lines: %q", lines)
	}
	if code, out, _ := c.cli("check", "--window", "1h", "-o", "json"); code != 4 || !strings.Contains(out, `"kind": "not-run"`) || strings.Contains(out, `"fire-late"`) {
		t.Errorf("check --window 1h -o json: exit %d, %s; want the not-run job only (the late fire is older)", code, out)
	}
}
