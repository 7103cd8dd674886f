// Package historymetrics exports the execution history's writer to
// Prometheus, on a metrics.Metrics: records offered, written, dropped and
// waiting, failed writes and rows pruned. It lives apart from package
// metrics so that a program that exports only its scheduler's metrics does
// not link the history. The history links no database client either: the
// program picks one by importing store/sqlite or store/postgres.
//
//	m, _ := metrics.New(metrics.Options{})
//	_ = historymetrics.Watch(m, rec)
package historymetrics

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardjob/shardjob/history"
	"github.com/shardjob/shardjob/metrics"
)

// The execution history's writer, read from history.Recorder.Stats at
// each scrape: what was offered, written, dropped (the buffer full, or the
// database down for longer than it holds) and what waits.

var (
	descHistRecorded = prometheus.NewDesc("shardjob_history_recorded_total", "Executions and job events offered to the history.", nil, nil)
	descHistWritten  = prometheus.NewDesc("shardjob_history_written_total", "History rows committed to the database.", nil, nil)
	descHistDropped  = prometheus.NewDesc("shardjob_history_dropped_total", "History records lost: the buffer was full (a slow or unreachable database) or the recorder closed.", nil, nil)
	descHistErrors   = prometheus.NewDesc("shardjob_history_write_errors_total", "History batch writes that failed (each is retried).", nil, nil)
	descHistBuffered = prometheus.NewDesc("shardjob_history_buffered", "History records waiting to be written.", nil, nil)
	descHistPruned   = prometheus.NewDesc("shardjob_history_pruned_total", "History rows deleted by retention.", nil, nil)
)

type historyCollector struct{ r *history.Recorder }

// Watch registers on m a collector of r's writer: records offered,
// written, dropped and waiting, failed writes and rows pruned. A Metrics
// watches one recorder: a second Watch is refused with metrics.ErrInvalid.
func Watch(m *metrics.Metrics, r *history.Recorder) error {
	if m == nil {
		return fmt.Errorf("%w: nil metrics", metrics.ErrInvalid)
	}
	if r == nil {
		return fmt.Errorf("%w: nil history recorder", metrics.ErrInvalid)
	}
	return m.Register("history", &historyCollector{r: r})
}

func (c *historyCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descHistRecorded, descHistWritten, descHistDropped, descHistErrors, descHistBuffered, descHistPruned} {
		ch <- d
	}
}

func (c *historyCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.r.Stats()
	for _, v := range []struct {
		d *prometheus.Desc
		n int64
	}{{descHistRecorded, st.Recorded}, {descHistWritten, st.Written}, {descHistDropped, st.Dropped}, {descHistErrors, st.WriteErrors}, {descHistPruned, st.Pruned}} {
		ch <- prometheus.MustNewConstMetric(v.d, prometheus.CounterValue, float64(v.n))
	}
	ch <- prometheus.MustNewConstMetric(descHistBuffered, prometheus.GaugeValue, float64(st.Buffered))
}
