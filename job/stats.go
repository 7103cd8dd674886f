package job

import (
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

// Stats is what a scheduler has done since it was created and where it
// stands now, for metrics (package metrics exports it to Prometheus) and
// for tests. Counters only grow; the other fields are as of the call.
type Stats struct {
	// Jobs has one entry per job added here, in name order.
	Jobs []JobStats
	// ZooKeeper counts the requests this instance's registry center sent,
	// on either registry (Backend says which; the field's name is older
	// than etcd support).
	ZooKeeper regcenter.Stats
	// SessionsLost counts registry sessions that expired under this
	// instance and were replaced by a new one.
	SessionsLost int64
	// Connected reports the connection to the registry up: while it is down
	// (suspended) the instance fires nothing.
	Connected bool
	// Placement is the instance's place in the namespace (units, running
	// items, alarm, drain).
	Placement PlacementStatus
	// Alarms counts EventAlarm raised here.
	Alarms int64
	// Score is the load score last published; HasScore is false without
	// WithLoadScore or before the first sample.
	Score    float64
	HasScore bool
}

// JobStats is one job's part of Stats.
type JobStats struct {
	Job string
	// Leader reports this instance as the job's leader now.
	Leader bool
	// Reshards counts reshards this instance committed as the job's
	// leader; ReshardErrors the ones that failed (and were retried).
	Reshards, ReshardErrors int64
	// FailoverClaims counts items this instance claimed from the job's
	// failover queue.
	FailoverClaims int64
	// MisfiresOwed counts items noted here as owing a make-up run (a fire
	// missed while the item ran or the session was down).
	MisfiresOwed int64
	// FiresExpired counts fires dropped here, not made up, for being older
	// than the job's StartingDeadline when their make-up run started.
	FiresExpired int64
	// Unplaced is how many items the last reshard committed here left
	// unplaced (caps); 0 where this instance is not the leader.
	Unplaced int
	// Retries counts the attempts started here after a failed run of the
	// same fire (Config.Retry).
	Retries int64
	// FiresLate counts the job's late fires raised by this instance
	// (AlertPolicy.Late; each late fire is raised by one instance).
	FiresLate int64
	// LastSuccess is when the job's latest successful run here ended, on
	// the scheduler's clock (zero: none since this process started).
	LastSuccess time.Time
}

// jobCounters are a runner's counters behind JobStats.
type jobCounters struct {
	reshards, reshardErrors, failoverClaims, misfiresOwed atomic.Int64
	firesExpired, unplaced                                atomic.Int64
	retries                                               atomic.Int64 // attempts after a failure (retry.go)
	// executing counts the job's calls into Execute in progress here: a
	// stop that waits for its items tells a job that ignores its context
	// from a completion that waits on the registry.
	executing atomic.Int64
}

// Stats reports what the scheduler has done and where it stands.
func (s *Scheduler) Stats() Stats {
	st := Stats{
		ZooKeeper:    s.rc.Stats(),
		SessionsLost: s.sessionsLost.Load(),
		Connected:    !s.suspended.Load() && s.rc.Session().Err() == nil,
		Placement:    s.Placement(),
		Alarms:       s.alarms.Load(),
	}
	st.Score, st.HasScore = s.Score()
	for _, r := range s.runnersSnapshot() {
		js := JobStats{
			Job:            r.name,
			Leader:         r.leading(),
			Reshards:       r.counters.reshards.Load(),
			ReshardErrors:  r.counters.reshardErrors.Load(),
			FailoverClaims: r.counters.failoverClaims.Load(),
			MisfiresOwed:   r.counters.misfiresOwed.Load(),
			FiresExpired:   r.counters.firesExpired.Load(),
			Retries:        r.counters.retries.Load(),
			FiresLate:      s.alert.book.Late(r.name),
			LastSuccess:    s.alert.book.LastSuccess(r.name),
		}
		if js.Leader {
			js.Unplaced = int(r.counters.unplaced.Load())
		}
		st.Jobs = append(st.Jobs, js)
	}
	return st
}
