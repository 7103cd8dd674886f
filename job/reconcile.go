package job

import (
	"context"

	"github.com/shardjob/shardjob/job/internal/reconcile"
	"github.com/shardjob/shardjob/regcenter"
)

// reconcileLoop is the scheduler's one repair loop, for every job
// (job/internal/reconcile's Loop): it re-registers a job that is not
// registered under the live session, and on each job's leader compares the
// stored assignment with what the strategy gives for the servers online,
// flagging a reshard when an assignment points at a dead instance or leaves
// a live one idle that should have items. It also measures the clock
// difference with the registry for MaxTimeDiff.
func (s *Scheduler) reconcileLoop() {
	reconcile.Loop{
		Default: DefaultReconcileInterval,
		Jobs: func() []reconcile.Job {
			rs := s.runnersSnapshot()
			jobs := make([]reconcile.Job, len(rs))
			for i, r := range rs {
				cfg := r.config()
				jobs[i] = reconcile.Job{Name: r.name, Every: cfg.ReconcileInterval, Clock: cfg.MaxTimeDiff > 0, Round: r.reconcileRound}
			}
			return jobs
		},
		Review:       s.reviewBooks,
		MeasureClock: s.inst.MeasureClock,
		RC:           s.rc, Timeout: s.opts.reshardTimeout,
	}.Run(s.ctx)
}

// reconcileRound is one job's repair (reconcile.Round) with what its last
// round kept (nil: nothing kept, every check made); it runs on the
// reconcile goroutine and bounds its registry work by the reshard
// timeout.
func (r *runner) reconcileRound(seen *reconcile.Seen) *reconcile.Round {
	cfg := r.config()
	return &reconcile.Round{RC: r.rc, Paths: r.paths, Server: r.serverID(), Life: r.ctx.life, Timeout: r.s.opts.reshardTimeout,
		Registered: r.book.Session,
		Behind: func(ctx context.Context) {
			if a := r.activeIfMade(); a != nil { // a job that never ran defers no record
				a.done.FlushStale(ctx)
			}
			r.s.sweepJournals(ctx) // at most once per journalSweep, whichever job's round
		},
		Reregister:    func(sess *regcenter.Session) { r.goFunc(func() { r.reregister(sess) }) },
		Prepared:      r.prep.Done,
		RestoreStatus: r.restoreStatus, Campaign: r.campaign, VerifyHolds: r.verifyHolds, IsLeader: r.leading,
		Assignment:  r.assignmentCheck(cfg),
		RepairBooks: r.repairWhileLive, Seen: seen, Log: r.log,
	}
}

// assignmentCheck is the leader's check of the job's stored assignment
// for cfg (reconcile.Assignment): each reconcile round's, and a new
// leader's (leader.Office.Inherit).
func (r *runner) assignmentCheck(cfg *spec) reconcile.Assignment {
	return reconcile.Assignment{RC: r.rc, Paths: r.paths, Name: r.name,
		Strategy: cfg.ShardingStrategy, Total: cfg.ShardingTotalCount, Lookup: cfg.Strategy,
		Failover: cfg.Failover, QueueDeparted: r.queueDeparted, Flag: r.setNecessary, Log: r.log}
}

// verifyHolds returns what to read to check the marks kept here, and the
// check (heldmarks.Keeper.Verify); the round asks only once the job is
// prepared, which made its active parts.
func (r *runner) verifyHolds(sess *regcenter.Session) ([]string, func([]regcenter.NodeData)) {
	return r.active().held.Verify(sess)
}

// repairWhileLive repairs the load table's books on the leader
// (reshard.Resharder.RepairWhileLive).
func (r *runner) repairWhileLive(ctx context.Context) error {
	return r.active().reshard.RepairWhileLive(ctx)
}
