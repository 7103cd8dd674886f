// Package dispatchmetrics exports a dispatcher's queues and counters to
// Prometheus, on a metrics.Metrics: every worker's tasks by state, running
// against its cap, due and late tasks, and what this node did. It lives
// apart from package metrics so that a program that exports only its
// scheduler's metrics does not link the dispatcher. The dispatcher links
// no database client either: the program picks one by importing
// store/sqlite or store/postgres.
//
//	m, _ := metrics.New(metrics.Options{})
//	_ = dispatchmetrics.Watch(m, d)
//	mux.Handle("/metrics", m.Handler())
package dispatchmetrics

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardjob/shardjob/dispatch"
	"github.com/shardjob/shardjob/metrics"
)

// readTimeout bounds the database read a scrape makes.
const readTimeout = 10 * time.Second

// A dispatcher's queues, read from its database at each scrape
// (dispatch.Dispatcher.Queues, one query), and this node's counters
// (dispatch.Dispatcher.Stats).

var (
	descTasks       = prometheus.NewDesc("shardjob_dispatch_tasks", "The dispatcher's tasks by worker and state (waiting, running, finished, failed, cancelled), across every node.", []string{"worker", "state"}, nil)
	descDue         = prometheus.NewDesc("shardjob_dispatch_tasks_due", "Waiting tasks whose run time has come: queued for a free slot.", []string{"worker"}, nil)
	descRunningCap  = prometheus.NewDesc("shardjob_dispatch_running", "Tasks the worker's cap is held against now, across every node.", []string{"worker"}, nil)
	descMaxRunning  = prometheus.NewDesc("shardjob_dispatch_max_running", "The worker's cap on running tasks (0 pauses it).", []string{"worker"}, nil)
	descLateTasks   = prometheus.NewDesc("shardjob_dispatch_tasks_late", "Tasks whose last start came after their acceptable start, whatever their state now.", []string{"worker"}, nil)
	descQueueErrors = prometheus.NewDesc("shardjob_dispatch_queue_read_errors_total", "Scrapes that could not read the dispatcher's queues from its database.", nil, nil)
	descNode        = prometheus.NewDesc("shardjob_dispatch_node_events_total", "What this dispatcher node did, by event (started, late, late_failed, finished, timed_out, retried, failed, reaped, stale, lease_lost, pruned: ended tasks deleted by the retention).", []string{"event"}, nil)
)

type dispatchCollector struct {
	d      *dispatch.Dispatcher
	log    *slog.Logger
	errors atomic.Int64 // scrapes that could not read the queues
}

// Watch registers on m a collector of d's queues (every worker's
// tasks by state, running against its cap, due and late tasks: one
// database query per scrape, bounded in time) and of this node's counters.
// A scrape that cannot read the queues still exports the counters, and
// counts the failure and writes a line to m's logger. A Metrics watches
// one dispatcher: a second Watch is refused with metrics.ErrInvalid.
func Watch(m *metrics.Metrics, d *dispatch.Dispatcher) error {
	if m == nil {
		return fmt.Errorf("%w: nil metrics", metrics.ErrInvalid)
	}
	if d == nil {
		return fmt.Errorf("%w: nil dispatcher", metrics.ErrInvalid)
	}
	return m.Register("dispatcher", &dispatchCollector{d: d, log: m.Logger()})
}

func (c *dispatchCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descTasks, descDue, descRunningCap, descMaxRunning, descLateTasks, descQueueErrors, descNode} {
		ch <- d
	}
}

func (c *dispatchCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.d.Stats()
	for _, e := range []struct {
		name string
		v    int64
	}{
		{"started", st.Started}, {"late", st.Late}, {"late_failed", st.LateFailed}, {"finished", st.Finished},
		{"timed_out", st.TimedOut}, {"retried", st.Retried}, {"failed", st.Failed}, {"reaped", st.Reaped},
		{"stale", st.Stale}, {"lease_lost", st.LeaseLost}, {"pruned", st.Pruned},
	} {
		ch <- prometheus.MustNewConstMetric(descNode, prometheus.CounterValue, float64(e.v), e.name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	qs, err := c.d.Queues(ctx)
	if err != nil {
		c.errors.Add(1)
		c.log.Warn("dispatchmetrics: reading the dispatcher's queues", "err", err)
	}
	ch <- prometheus.MustNewConstMetric(descQueueErrors, prometheus.CounterValue, float64(c.errors.Load()))
	for _, q := range qs {
		states := make([]string, 0, len(q.Tasks))
		for s := range q.Tasks {
			states = append(states, string(s))
		}
		sort.Strings(states)
		for _, s := range states {
			ch <- prometheus.MustNewConstMetric(descTasks, prometheus.GaugeValue, float64(q.Tasks[dispatch.Status(s)]), q.Worker, s)
		}
		ch <- prometheus.MustNewConstMetric(descDue, prometheus.GaugeValue, float64(q.Due), q.Worker)
		ch <- prometheus.MustNewConstMetric(descRunningCap, prometheus.GaugeValue, float64(q.Running), q.Worker)
		ch <- prometheus.MustNewConstMetric(descMaxRunning, prometheus.GaugeValue, float64(q.MaxRunning), q.Worker)
		ch <- prometheus.MustNewConstMetric(descLateTasks, prometheus.GaugeValue, float64(q.Late), q.Worker)
	}
}
