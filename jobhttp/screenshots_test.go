package jobhttp_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/shardjob/shardjob/dispatch"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobhttp"
	"github.com/shardjob/shardjob/jobhttp/dispatchhttp"
	"github.com/shardjob/shardjob/jobhttp/historyhttp"
)

// TestConsoleScreenshots writes a PNG of each console page, over a live
// cluster and dispatcher, into the directory SHARDJOB_SCREENSHOTS names
// (make screenshots: docs/console). Without it the test is skipped: the
// pages are checked by the other console tests.
func TestConsoleScreenshots(t *testing.T) {
	dir := os.Getenv("SHARDJOB_SCREENSHOTS")
	if dir == "" {
		t.Skip("set SHARDJOB_SCREENSHOTS to a directory to write the console's screenshots (make screenshots)")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	d, err := dispatch.Open(ctx, dispatch.Config{DSN: filepath.Join(t.TempDir(), "dispatch.db"), Logger: testLogger(t),
		OnStart: func(context.Context, dispatch.Task) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = d.Close(cctx)
	})
	now := time.Now()
	for _, w := range []struct {
		dispatch.Worker
		tasks int
	}{{dispatch.Worker{Name: "email", MaxRunning: 3}, 8}, {dispatch.Worker{Name: "sms", MaxRunning: 1}, 4}, {dispatch.Worker{Name: "webhooks", MaxRunning: 0}, 5}} {
		if err := d.PutWorker(ctx, w.Worker); err != nil {
			t.Fatal(err)
		}
		var tasks []dispatch.NewTask
		for i := range w.tasks {
			tasks = append(tasks, dispatch.NewTask{ExternalID: fmt.Sprintf("%s-%d", w.Name, i)})
		}
		if _, err := d.Assign(ctx, dispatch.Assignment{Worker: w.Name, Start: now.Add(-time.Second), End: now.Add(time.Hour), Tasks: tasks}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}

	orders := job.Config{Name: "orders-sync", Cron: "*/2 * * * * *", ShardingTotalCount: 4, Failover: true,
		ShardingItemParameters: "0=Beijing,1=Shanghai,2=Guangzhou,3=Shenzhen", Description: "copies new orders to the warehouse"}
	cache := job.Config{Name: "cache-warm", Cron: "*/3 * * * * *", ShardingTotalCount: 3}
	// A chain whose middle fails: the job after it skips.
	extract := job.Config{Name: "extract", Cron: "*/3 * * * * *", ShardingTotalCount: 4}
	transform := job.Config{Name: "transform", Cron: extract.Cron, ShardingTotalCount: 2, After: "extract"}
	load := job.Config{Name: "load", Cron: extract.Cron, ShardingTotalCount: 1, After: "extract,transform"}
	rec := openRecorder(t)
	setup := consoleSetup{
		instance: func(string) []job.Option {
			return append([]job.Option{job.WithLoadScore(time.Second, 4, nil), job.WithAlarmThreshold(3)}, rec.SchedulerOptions()...)
		},
		exec: func(ctx context.Context, sc job.ShardingContext) error {
			if sc.JobName == orders.Name && sc.Item == 3 {
				return errors.New("warehouse API answered 503 Service Unavailable")
			}
			if sc.JobName == transform.Name && sc.Item == 1 {
				return errors.New("schema check: column amount is text, want numeric")
			}
			return nil
		},
	}
	cc := newConsoleCluster(t, jobhttp.Options{Token: consoleToken, Dispatcher: dispatchhttp.New(d), History: historyhttp.New(rec)}, setup, orders, cache,
		job.Config{Name: "daily-report", Cron: "0 0 2 * * *", ShardingTotalCount: 2, Description: "the nightly sales report"},
		extract, transform, load)
	tb := newTab(t)
	shot := func(name string) {
		t.Helper()
		var png []byte
		tb.run(chromedp.FullScreenshot(&png, 100))
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tb.open(cc.console)
	tb.setToken(consoleToken)
	tb.waitText("#jobs-table tbody tr:nth-child(5)", "orders-sync", "3 ok", "1 failed")
	tb.waitText("#jobs-table tbody tr:nth-child(1)", "cache-warm", "3 ok")
	shot("overview")

	tb.click(`a.job-link[href="#/job/orders-sync"]`)
	tb.waitText("#job-items", "503")
	tb.click(`#job-servers button[data-action="trigger"][data-server="a2"]`)
	tb.waitText("#notice", "done")
	shot("job")

	tb.click(`#nav a[data-view="chains"]`)
	tb.waitTrue("the chain's states", `JSON.stringify([...document.querySelectorAll("#chains-graph .chain-node")].map((g) => g.dataset.state)) === '["completed","failed","skipped"]'`)
	shot("chains")

	tb.click(`#nav a[data-view="instances"]`)
	tb.waitText("#instances-table", "a1", "a2", "online")
	shot("instances")

	tb.click(`#nav a[data-view="history"]`)
	tb.waitText("#history-table", "orders-sync", "failure", "503", "success")
	tb.waitText("#history-events", "orders-sync")
	shot("history")

	tb.click(`#nav a[data-view="dispatcher"]`)
	tb.waitText("#dispatch-table", "email", "webhooks")
	shot("dispatcher")
}
