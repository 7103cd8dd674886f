package historymetrics_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/shardjob/shardjob/history"
	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/listener"
	"github.com/shardjob/shardjob/metrics"
	"github.com/shardjob/shardjob/metrics/historymetrics"
	"github.com/shardjob/shardjob/metrics/internal/scrapetest"
)

// The history's writer as a scrape sees it: records written, then, once
// the recorder is closed, records dropped.
func TestHistoryMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec, err := history.Open(ctx, history.Config{DSN: filepath.Join(t.TempDir(), "history.db"), Logger: testlog.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	m, err := metrics.New(metrics.Options{Logger: testlog.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := historymetrics.Watch(m, nil); !errors.Is(err, metrics.ErrInvalid) {
		t.Errorf("Watch(m, nil) = %v, want ErrInvalid", err)
	}
	if err := historymetrics.Watch(m, rec); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	now := time.Now()
	for i := range 5 {
		rec.AfterExecution(listener.Execution{Job: "j", ServerID: "s", Item: i, Kind: "fire", FireTime: now, Begin: now, End: now.Add(time.Millisecond)})
	}
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	f := scrapetest.Scrape(t, srv.URL)
	for name, want := range map[string]float64{
		"shardjob_history_recorded_total": 5, "shardjob_history_written_total": 5, "shardjob_history_dropped_total": 0,
		"shardjob_history_write_errors_total": 0, "shardjob_history_buffered": 0,
	} {
		if got := scrapetest.Value(f, name, nil); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	rec.AfterExecution(listener.Execution{Job: "j", ServerID: "s", Kind: "fire", FireTime: now, Begin: now, End: now})
	if got := scrapetest.Value(scrapetest.Scrape(t, srv.URL), "shardjob_history_dropped_total", nil); got != 1 {
		t.Errorf("dropped after close = %v, want 1", got)
	}
}

// metrics.Result, written apart so that package metrics links no database
// driver, classifies an execution's error as the history does.
func TestResultIsTheHistorys(t *testing.T) {
	for _, err := range []error{nil, errors.New("boom"), fmt.Errorf("item 3: %w", job.ErrExecutionTimeout),
		context.DeadlineExceeded, context.Canceled, fmt.Errorf("wrapped: %w", context.DeadlineExceeded)} {
		if got, want := metrics.Result(err), string(history.ResultOf(err)); got != want {
			t.Errorf("metrics.Result(%v) = %s, history.ResultOf = %s", err, got, want)
		}
	}
	for _, r := range []history.Result{history.ResultSuccess, history.ResultFailure, history.ResultTimeout} {
		switch string(r) {
		case metrics.ResultSuccess, metrics.ResultFailure, metrics.ResultTimeout:
		default:
			t.Errorf("history result %q is none of the metrics' result labels", r)
		}
	}
}
