package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// The scheduler's state, read from job.Scheduler.Stats at each scrape.

var (
	descRegRequests    = prometheus.NewDesc("shardjob_registry_requests_total", "Requests this instance sent to its registry, by backend (zookeeper, etcd) and kind (read, write, multi, watch); each is one round trip.", []string{"backend", "kind"}, nil)
	descRegErrors      = prometheus.NewDesc("shardjob_registry_errors_total", "Registry requests that failed for want of an answer (connection loss, lost session, deadline), by backend.", []string{"backend"}, nil)
	descRegConnected   = prometheus.NewDesc("shardjob_registry_connected", "1 while this instance's registry session is live and connected; it fires nothing while 0.", []string{"backend"}, nil)
	descRegSessionLost = prometheus.NewDesc("shardjob_registry_sessions_lost_total", "Registry sessions that expired (or whose lease lapsed) under this instance and were replaced.", []string{"backend"}, nil)

	// The names before the registry was more than ZooKeeper, kept for
	// dashboards and alerts built on them (docs/operations.md): exported
	// on ZooKeeper only, with the same values. Deprecated.
	descZKRequests   = prometheus.NewDesc("shardjob_zookeeper_requests_total", "Deprecated: shardjob_registry_requests_total{backend=\"zookeeper\"}.", []string{"kind"}, nil)
	descZKErrors     = prometheus.NewDesc("shardjob_zookeeper_errors_total", "Deprecated: shardjob_registry_errors_total{backend=\"zookeeper\"}.", nil, nil)
	descZKConnected  = prometheus.NewDesc("shardjob_zookeeper_connected", "Deprecated: shardjob_registry_connected{backend=\"zookeeper\"}.", nil, nil)
	descSessionsLost = prometheus.NewDesc("shardjob_zookeeper_sessions_lost_total", "Deprecated: shardjob_registry_sessions_lost_total{backend=\"zookeeper\"}.", nil, nil)
	descReshards     = prometheus.NewDesc("shardjob_reshards_total", "Reshards this instance committed as the job's leader.", []string{"job"}, nil)
	descReshardErrs  = prometheus.NewDesc("shardjob_reshard_errors_total", "Reshards this instance tried as the job's leader that failed (and were retried).", []string{"job"}, nil)
	descFailovers    = prometheus.NewDesc("shardjob_failover_claims_total", "Items this instance claimed from the job's failover queue.", []string{"job"}, nil)
	descMisfires     = prometheus.NewDesc("shardjob_misfires_owed_total", "Items noted here as owing a make-up run (a fire missed while the item ran or the session was down).", []string{"job"}, nil)
	descExpired      = prometheus.NewDesc("shardjob_fires_expired_total", "Fires dropped here, not made up, for being older than the job's starting deadline.", []string{"job"}, nil)
	descRetries      = prometheus.NewDesc("shardjob_item_retries_total", "Attempts started here after a failed run of the same fire (the job's retry policy).", []string{"job"}, nil)
	descUnplaced     = prometheus.NewDesc("shardjob_unplaced_items", "Items the last reshard committed here left unplaced for want of room under the caps (leader only).", []string{"job"}, nil)
	descLeader       = prometheus.NewDesc("shardjob_leader", "1 where this instance is the job's leader.", []string{"job"}, nil)
	descUnits        = prometheus.NewDesc("shardjob_units", "Units (items of every job) this instance holds, as the load table last said.", nil, nil)
	descRunning      = prometheus.NewDesc("shardjob_items_running", "Items running on this instance now.", nil, nil)
	descAlarm        = prometheus.NewDesc("shardjob_alarm", "1 while this instance holds more units than its alarm threshold.", nil, nil)
	descAlarms       = prometheus.NewDesc("shardjob_alarms_total", "Alarms raised here (units crossing above the threshold).", nil, nil)
	descScore        = prometheus.NewDesc("shardjob_load_score", "The load score this instance last published (100 idle, 0 saturated); absent without a score.", nil, nil)
	descDraining     = prometheus.NewDesc("shardjob_draining", "1 while this instance is on the drain list.", nil, nil)
	descDrained      = prometheus.NewDesc("shardjob_drained", "1 once a draining instance holds nothing and runs nothing: safe to stop.", nil, nil)
	descFiresLate    = prometheus.NewDesc("shardjob_fire_late_total", "Late fires of the job (alert.late) raised by this instance; each late fire is raised by one instance of the cluster.", []string{"job"}, nil)
	descLastSuccess  = prometheus.NewDesc("shardjob_job_last_success_timestamp_seconds", "When the job's latest successful run on this instance ended (unix seconds); absent before its first. The cluster's is the maximum over instances.", []string{"job"}, nil)
)

type schedulerCollector struct{ s *job.Scheduler }

func (c *schedulerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRegRequests, descRegErrors, descRegConnected, descRegSessionLost,
		descZKRequests, descZKErrors, descZKConnected, descSessionsLost,
		descReshards, descReshardErrs, descFailovers, descMisfires, descExpired, descUnplaced, descLeader, descRetries,
		descUnits, descRunning, descAlarm, descAlarms, descScore, descDraining, descDrained,
		descFiresLate, descLastSuccess} {
		ch <- d
	}
}

func (c *schedulerCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	reg := st.ZooKeeper // the registry's requests, whichever it is
	backend := reg.Backend
	if backend == "" {
		backend = "unknown"
	}
	counter(descRegRequests, reg.Reads, backend, "read")
	counter(descRegRequests, reg.Writes, backend, "write")
	counter(descRegRequests, reg.Multis, backend, "multi")
	counter(descRegRequests, reg.Watches, backend, "watch")
	counter(descRegErrors, reg.Errors, backend)
	gauge(descRegConnected, bit(st.Connected), backend)
	counter(descRegSessionLost, st.SessionsLost, backend)
	if backend == regcenter.BackendZooKeeper {
		counter(descZKRequests, reg.Reads, "read")
		counter(descZKRequests, reg.Writes, "write")
		counter(descZKRequests, reg.Multis, "multi")
		counter(descZKRequests, reg.Watches, "watch")
		counter(descZKErrors, reg.Errors)
		gauge(descZKConnected, bit(st.Connected))
		counter(descSessionsLost, st.SessionsLost)
	}
	for _, j := range st.Jobs {
		counter(descReshards, j.Reshards, j.Job)
		counter(descReshardErrs, j.ReshardErrors, j.Job)
		counter(descFailovers, j.FailoverClaims, j.Job)
		counter(descMisfires, j.MisfiresOwed, j.Job)
		counter(descExpired, j.FiresExpired, j.Job)
		counter(descRetries, j.Retries, j.Job)
		gauge(descUnplaced, float64(j.Unplaced), j.Job)
		gauge(descLeader, bit(j.Leader), j.Job)
		counter(descFiresLate, j.FiresLate, j.Job)
		if !j.LastSuccess.IsZero() {
			gauge(descLastSuccess, float64(j.LastSuccess.UnixMilli())/1e3, j.Job)
		}
	}
	p := st.Placement
	gauge(descUnits, float64(p.Units))
	gauge(descRunning, float64(p.Running))
	gauge(descAlarm, bit(p.Alarmed))
	counter(descAlarms, st.Alarms)
	if st.HasScore {
		gauge(descScore, st.Score)
	}
	gauge(descDraining, bit(p.Draining))
	gauge(descDrained, bit(p.Drained))
}

func bit(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
