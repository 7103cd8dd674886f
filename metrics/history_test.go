package metrics_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/shardjob/shardjob/history"
	"github.com/shardjob/shardjob/internal/testlog"
	"github.com/shardjob/shardjob/listener"
	"github.com/shardjob/shardjob/metrics"
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
	if err := m.WatchHistory(nil); !errors.Is(err, metrics.ErrInvalid) {
		t.Errorf("WatchHistory(nil) = %v, want ErrInvalid", err)
	}
	if err := m.WatchHistory(rec); err != nil {
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
	f := scrapeURL(t, srv.URL)
	for name, want := range map[string]float64{
		"shardjob_history_recorded_total": 5, "shardjob_history_written_total": 5, "shardjob_history_dropped_total": 0,
		"shardjob_history_write_errors_total": 0, "shardjob_history_buffered": 0,
	} {
		if got := value(f, name, nil); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	rec.AfterExecution(listener.Execution{Job: "j", ServerID: "s", Kind: "fire", FireTime: now, Begin: now, End: now})
	if got := value(scrapeURL(t, srv.URL), "shardjob_history_dropped_total", nil); got != 1 {
		t.Errorf("dropped after close = %v, want 1", got)
	}
}
