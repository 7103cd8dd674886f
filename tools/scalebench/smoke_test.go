package main

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/tools/benchkit/registry"
)

func TestParseFlags(t *testing.T) {
	c, err := parseFlags(nil)
	if err != nil || c.registry != registry.ZooKeeper || c.jobs != 100_000 || c.instances != 10 || c.fastPct != 1 {
		t.Fatalf("defaults %+v, %v", c, err)
	}
	for _, bad := range [][]string{
		{"-registry", "consul"}, {"-instances", "1"}, {"-jobs", "0"}, {"-fast-pct", "101"}, {"-idle", "0s"}, {"extra"},
	} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestSmoke runs the whole bench on a small namespace: 200 jobs, 4 of
// them every second, on 2 instances and ZooKeeper, short windows, a 2 s
// session. It fails on any step's error: a fire lost, two runs of an item
// at once, a victim's items not back within the session timeout and 30 s.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper and instance processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Skip where ZooKeeper is not installed, as the other tools' tests do.
	probe, err := registry.Start(ctx, registry.ZooKeeper, t.TempDir(), slog.New(slog.DiscardHandler))
	if errors.Is(err, zktest.ErrNotInstalled) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := probe.Close(); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseFlags([]string{"-jobs", "200", "-instances", "2", "-fast-pct", "2", "-session-timeout", "2s",
		"-idle", "3s", "-window", "3s", "-settle", "3s", "-place-deadline", "30s", "-reg-deadline", "60s", "-zk-heap", "256m"})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Logf("the bench took %v", time.Since(t0).Round(time.Millisecond))
}
