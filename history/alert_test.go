package history

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobtest"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

// TestAlertIsAHistoryRow: a fire raised late on a real ZooKeeper is an
// event row of kind fire-late, with its error (SQLite: the row is the
// recorder's, the database does not matter here).
func TestAlertIsAHistoryRow(t *testing.T) {
	ctx := testCtx(t)
	rec := open(t, Config{Driver: DriverSQLite, DSN: t.TempDir() + "/history.db", Logger: testlog.Logger(t)})
	rc, err := zookeeper.Open(ctx, regcenter.Config{Servers: zc.Servers(), Namespace: fmt.Sprintf("histalert%d", time.Now().UnixNano()), SessionTimeout: 4 * time.Second},
		regcenter.WithLogger(testlog.Logger(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	clk := jobtest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := job.NewScheduler(rc, append([]job.Option{job.WithServerID("a1"), job.WithLogger(testlog.Logger(t)), job.WithClock(clk),
		job.WithAlertCheck(-1)}, rec.SchedulerOptions()...)...)
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	err = s.Add(ctx, job.Config{Name: "slow", Cron: "0 * * * * *", ShardingTotalCount: 1, Alert: job.AlertPolicy{Late: 5 * time.Second}},
		job.SimpleFunc(func(ctx context.Context, _ job.ShardingContext) error {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // registered after the recorder's Close, so it runs first
		close(release)
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(sctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	clk.Set(clk.Now().Add(time.Minute))
	clk.Set(clk.Now().Add(6 * time.Second))
	var p EventPage
	waitFor(t, 60*time.Second, "the late fire's event written", func() bool {
		flush(t, rec)
		if p, err = rec.QueryEvents(ctx, Filter{Job: "slow", Kind: string(job.EventFireLate)}); err != nil {
			t.Fatal(err)
		}
		return len(p.Events) >= 1
	})
	if ev := p.Events[0]; len(p.Events) != 1 || ev.Server != "a1" || !strings.Contains(ev.Error, "fire late") {
		t.Errorf("events %+v, want one fire-late row by a1 with its error", p.Events)
	}
}
