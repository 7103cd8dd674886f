// Package metrics exports what a shardjob instance does to Prometheus:
// fires, item executions by job, kind and result, how late fires start and
// how long items run (histograms), registry requests (ZooKeeper or etcd,
// labelled by backend), errors and session state, reshards, failover claims, misfires owed, unplaced items, alarms,
// the load score and the drain state.
//
// It stands above package job and, with the collectors beside it, is the
// only part of the module that imports the Prometheus client: an
// application that exports no metrics does not link it. The dispatcher's
// and the execution history's collectors live in packages of their own,
// metrics/dispatchmetrics and metrics/historymetrics, so that a program
// that exports only its scheduler's metrics links no database driver; they
// register on the same Metrics. Counters the scheduler keeps anyway
// (job.Scheduler.Stats) are read when Prometheus scrapes; executions and fires are counted as they happen, through the
// scheduler's listeners, which cost a map lookup and an atomic add on the
// item's goroutine.
//
// Labels are bounded: job names, worker names, kinds, results and states,
// never items, parameters or task ids.
//
//	m, _ := metrics.New(metrics.Options{})
//	sched, _ := job.NewScheduler(rc, m.SchedulerOptions()...)
//	_ = m.Watch(sched)
//	mux.Handle("/metrics", m.Handler())
package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/listener"
)

// ErrInvalid reports a bad argument to this package's functions.
var ErrInvalid = errors.New("metrics: invalid")

// Execution results, the values of the "result" label: the execution
// history's (history.Result) values.
const (
	ResultSuccess = "success"
	ResultFailure = "failure"
	ResultTimeout = "timeout"
)

// DefaultDelayBuckets are the fire delay histogram's buckets, in seconds:
// from a millisecond, a fire's usual delay, to a minute, a make-up run's.
var DefaultDelayBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// DefaultDurationBuckets are the execution duration histogram's buckets,
// in seconds: a millisecond to ten minutes.
var DefaultDurationBuckets = []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// Options configures New.
type Options struct {
	// Registerer receives the collectors. Nil means a registry of the
	// Metrics' own, with the Go runtime and process collectors, which
	// Handler serves.
	Registerer prometheus.Registerer
	// Gatherer is what Handler serves when Registerer is set (nil: Handler
	// serves prometheus.DefaultGatherer if Registerer is
	// prometheus.DefaultRegisterer, and refuses otherwise).
	Gatherer prometheus.Gatherer
	// DelayBuckets and DurationBuckets override the histograms' buckets
	// (seconds, increasing). Nil means DefaultDelayBuckets and
	// DefaultDurationBuckets.
	DelayBuckets, DurationBuckets []float64
	// Logger receives a line when a scrape fails, or a collector added
	// with Register cannot read what it measures (a dispatcher's queues).
	// Nil means slog.Default().
	Logger *slog.Logger
}

// Metrics holds a shardjob instance's collectors. Create it with New, pass
// SchedulerOptions to job.NewScheduler, then Watch the scheduler (and
// dispatchmetrics.Watch a dispatcher, historymetrics.Watch a history
// recorder).
type Metrics struct {
	reg      prometheus.Registerer
	gatherer prometheus.Gatherer
	log      *slog.Logger

	fires      *prometheus.CounterVec   // job, kind
	executions *prometheus.CounterVec   // job, kind, result
	delay      *prometheus.HistogramVec // job, kind
	duration   *prometheus.HistogramVec // job, kind

	mu      sync.Mutex
	watched map[string]bool // the names given to Register: "scheduler", "dispatcher", "history", ...
}

// New makes the collectors and registers the ones that count as things
// happen. It fails when they cannot be registered (a second Metrics on the
// same registry) or a bucket list is not increasing.
func New(opts Options) (*Metrics, error) {
	m := &Metrics{reg: opts.Registerer, gatherer: opts.Gatherer, log: opts.Logger, watched: map[string]bool{}}
	if m.log == nil {
		m.log = slog.Default()
	}
	if m.reg == nil {
		own := prometheus.NewRegistry()
		own.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		m.reg, m.gatherer = own, own
	} else if m.gatherer == nil && m.reg == prometheus.DefaultRegisterer {
		m.gatherer = prometheus.DefaultGatherer
	}
	delay, err := buckets("DelayBuckets", opts.DelayBuckets, DefaultDelayBuckets)
	if err != nil {
		return nil, err
	}
	duration, err := buckets("DurationBuckets", opts.DurationBuckets, DefaultDurationBuckets)
	if err != nil {
		return nil, err
	}
	m.fires = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shardjob_fires_total",
		Help: "Fires that ran items on this instance, by job and kind (fire, misfire, failover, trigger).",
	}, []string{"job", "kind"})
	m.executions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shardjob_executions_total",
		Help: "Item executions that ended on this instance, by job, kind (fire, misfire, failover, trigger) and result (success, failure, timeout).",
	}, []string{"job", "kind", "result"})
	m.delay = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "shardjob_fire_delay_seconds",
		Help:    "Time from a fire's scheduled time to its items starting on this instance, by job and kind.",
		Buckets: delay,
	}, []string{"job", "kind"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "shardjob_execution_duration_seconds",
		Help:    "How long item executions ran on this instance, by job and kind.",
		Buckets: duration,
	}, []string{"job", "kind"})
	for _, c := range []prometheus.Collector{m.fires, m.executions, m.delay, m.duration} {
		if err := m.reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: registering the execution collectors: %w", err)
		}
	}
	return m, nil
}

func buckets(name string, got, def []float64) ([]float64, error) {
	if got == nil {
		return def, nil
	}
	if len(got) == 0 {
		return nil, fmt.Errorf("%w: %s is empty", ErrInvalid, name)
	}
	for i := 1; i < len(got); i++ {
		if !(got[i] > got[i-1]) {
			return nil, fmt.Errorf("%w: %s must increase: %v", ErrInvalid, name, got)
		}
	}
	return got, nil
}

// SchedulerOptions returns the job options that let m count fires and
// executions: a listener and a fire listener. Pass them to
// job.NewScheduler along with the application's own options.
func (m *Metrics) SchedulerOptions() []job.Option {
	return []job.Option{
		job.WithListener(listener.Funcs{After: m.afterExecution}),
		job.WithFireListener(listener.FireFuncs{Started: m.fireStarted}),
	}
}

func (m *Metrics) fireStarted(f listener.Fire) {
	m.fires.WithLabelValues(f.Job, f.Kind).Inc()
	if d := f.Begin.Sub(f.FireTime); d >= 0 {
		m.delay.WithLabelValues(f.Job, f.Kind).Observe(d.Seconds())
	}
}

func (m *Metrics) afterExecution(e listener.Execution) {
	m.executions.WithLabelValues(e.Job, e.Kind, Result(e.Err)).Inc()
	if d := e.End.Sub(e.Begin); d >= 0 {
		m.duration.WithLabelValues(e.Job, e.Kind).Observe(d.Seconds())
	}
}

// Result classifies an execution's error as the "result" label does:
// success for nil, timeout for an execution that ran out of its time
// (job.ErrExecutionTimeout, a deadline), failure for anything else.
// It is the execution history's classification (history.ResultOf),
// written here so that this package does not link the history's database
// drivers; a test in metrics/historymetrics holds the two together.
func Result(err error) string {
	switch {
	case err == nil:
		return ResultSuccess
	case errors.Is(err, job.ErrExecutionTimeout), errors.Is(err, context.DeadlineExceeded):
		return ResultTimeout
	default:
		return ResultFailure
	}
}

// Watch registers a collector that reads s.Stats() at each scrape:
// ZooKeeper requests, errors and session state, reshards, failover claims,
// misfires owed and unplaced items by job, and the instance's units,
// running items, alarm, load score and drain state. A Metrics watches one
// scheduler.
func (m *Metrics) Watch(s *job.Scheduler) error {
	if s == nil {
		return fmt.Errorf("%w: nil scheduler", ErrInvalid)
	}
	return m.Register("scheduler", &schedulerCollector{s: s})
}

// Register adds c, the collector of the subsystem named what, to m's
// registry: the way metrics/dispatchmetrics and metrics/historymetrics
// join a Metrics, and an application's own collectors may too. A Metrics
// takes one collector per name; a second is refused with ErrInvalid, as is
// an empty name or a nil collector.
func (m *Metrics) Register(what string, c prometheus.Collector) error {
	if what == "" {
		return fmt.Errorf("%w: a collector registered without a name", ErrInvalid)
	}
	if c == nil {
		return fmt.Errorf("%w: nil collector for %q", ErrInvalid, what)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.watched[what] {
		return fmt.Errorf("%w: this Metrics watches a %s already", ErrInvalid, what)
	}
	if err := m.reg.Register(c); err != nil {
		return fmt.Errorf("metrics: registering the %s collector: %w", what, err)
	}
	m.watched[what] = true
	return nil
}

// Logger returns the logger of Options.Logger (slog.Default() if it was
// nil), for collectors added with Register to report what a scrape could
// not read.
func (m *Metrics) Logger() *slog.Logger { return m.log }

// Handler serves the metrics in Prometheus' text format. Without a
// gatherer (see Options.Gatherer) it answers 500 naming the problem.
func (m *Metrics) Handler() http.Handler {
	if m.gatherer == nil {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "metrics: no gatherer: set Options.Gatherer to the registry behind Options.Registerer", http.StatusInternalServerError)
		})
	}
	return promhttp.HandlerFor(m.gatherer, promhttp.HandlerOpts{ErrorLog: slogErrorLog{m.log}, Timeout: scrapeTimeout})
}

// scrapeTimeout bounds a scrape.
const scrapeTimeout = 10 * time.Second

// slogErrorLog adapts slog to promhttp's error log.
type slogErrorLog struct{ log *slog.Logger }

func (l slogErrorLog) Println(v ...any) {
	l.log.Warn("metrics: serving a scrape", "err", fmt.Sprint(v...))
}
