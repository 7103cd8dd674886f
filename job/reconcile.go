package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/reshard"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/sharding"
)

// clockNode is written once per reconcile round to learn ZooKeeper's clock
// from the write's modification time.
const clockNode = "/.clock"

// reconcileLoop is the scheduler's one repair loop, for every job: it
// re-registers a job that is not registered under the live session, and on
// each job's leader compares the stored assignment with what the strategy
// gives for the servers online, flagging a reshard when an assignment points
// at a dead instance or leaves a live one idle that should have items. It
// also measures the clock difference with ZooKeeper for MaxTimeDiff.
func (s *Scheduler) reconcileLoop() {
	timer := time.NewTimer(0)
	defer timer.Stop()
	last := map[string]time.Time{}
	// Rounds go by real time, not the clock the jobs fire by (WithClock):
	// they repair the registry's state, which does not wait for a fake
	// clock to move.
	pruned := time.Now() // the first round comes an interval after start
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-timer.C:
		}
		now := time.Now()
		next := time.Minute
		measured := false
		if now.Sub(pruned) >= DefaultReconcileInterval {
			pruned = now
			s.reviewBooks()
		}
		for _, r := range s.runnersSnapshot() {
			cfg := r.config()
			every := cfg.ReconcileInterval
			if every <= 0 {
				every = DefaultReconcileInterval
			}
			if cfg.MaxTimeDiff > 0 && !measured {
				s.measureClock()
				measured = true
			}
			// A job is first reconciled an interval after the loop first
			// sees it: registration has just done what a round would.
			if t, ok := last[r.name]; !ok {
				last[r.name] = now
			} else if now.Sub(t) >= every {
				last[r.name] = now
				r.reconcile()
			}
			next = min(next, every)
		}
		timer.Reset(next)
	}
}

// reconcile repairs one job; it runs on the reconcile goroutine and bounds
// its ZooKeeper work by the reshard timeout.
func (r *runner) reconcile() {
	sess := r.rc.Session()
	if sess.Err() != nil {
		return
	}
	reg, stopping := r.book.Session()
	if stopping {
		return
	}
	{
		ctx, cancel := context.WithTimeout(r.ctx.life, r.s.opts.reshardTimeout)
		r.flushStale(ctx)
		r.s.sweepJournals(ctx) // at most once per journalSweep, whichever job's round
		cancel()
	}
	if reg == nil {
		return // still starting
	}
	if reg != sess {
		r.goFunc(func() { r.reregister(sess) })
		return
	}
	if !r.prep.done.Load() {
		// Not in the election yet and running nothing: its flags watch
		// restores its status, and it costs no request between fires.
		return
	}
	ctx, cancel := context.WithTimeout(sess.Ctx(), r.s.opts.reshardTimeout)
	defer cancel()
	// Our own registration: a status node deleted under us is restored
	// (the flags watch normally does it at once; this is the backstop).
	if ok, _, err := r.rc.Exists(ctx, r.paths.Flag(r.serverID(), layout.Status)); err == nil && !ok {
		r.restoreStatus(ctx, sess)
	}
	if ok, _, err := r.rc.Exists(ctx, r.paths.ElectionHost()); err == nil && !ok {
		// Nobody leads: campaign again in case a watch was missed.
		if err := r.elect.Campaign(ctx); err != nil {
			r.log.Warn("reconcile: rejoining election", "err", err)
		}
	}
	r.verifyHolds(ctx, sess)
	if !r.elect.IsLeader() {
		return
	}
	if err := r.checkAssignment(ctx); err != nil {
		r.log.Warn("reconcile", "err", err)
	}
	if err := r.repairBooksWhileLive(ctx); err != nil && ctx.Err() == nil {
		r.log.Warn("reconcile: repairing the load table's books", "err", err)
	}
}

// checkAssignment flags a reshard when the stored assignment differs from
// the strategy's for the servers online now.
func (r *runner) checkAssignment(ctx context.Context) error {
	servers, err := reshard.ReadServers(ctx, r.rc, r.paths)
	if err != nil {
		return err
	}
	cfg := r.config()
	if name := cfg.ShardingStrategy; name == "" || name == sharding.Balanced || name == sharding.Idlest {
		return r.checkPlacement(ctx, cfg, servers)
	}
	strategy, err := cfg.Strategy()
	if err != nil {
		return err
	}
	want, err := sharding.Assign(strategy, r.name, servers.Online(), cfg.ShardingTotalCount)
	if err != nil {
		return err
	}
	stale, err := reshard.FirstStale(ctx, r.rc, r.paths, servers, want)
	switch {
	case err != nil:
		return err
	case stale.Garbage != nil:
		r.log.Warn("reconcile: garbage assignment; resharding", "server", stale.Server, "err", stale.Garbage)
		r.setNecessary(ctx)
	case stale.Server != "":
		r.log.Info("reconcile: stored assignment is stale; flagging a reshard", "server", stale.Server, "have", stale.Have, "want", stale.Want)
		if cfg.Failover {
			if err := r.queueDeparted(ctx, servers); err != nil {
				r.log.Warn("reconcile: queueing failover", "err", err)
			}
		}
		r.setNecessary(ctx)
	}
	return nil
}

// checkPlacement flags a reshard when a placed job's stored assignment is
// not valid for the servers online now (reshard.PlacementFault says why).
func (r *runner) checkPlacement(ctx context.Context, cfg *spec, servers reshard.Servers) error {
	why, err := reshard.PlacementFault(ctx, r.rc, r.paths, servers, cfg.ShardingTotalCount)
	if err != nil || why == "" {
		return err
	}
	r.log.Info("reconcile: flagging a reshard", "why", why)
	if cfg.Failover {
		if err := r.queueDeparted(ctx, servers); err != nil {
			r.log.Warn("reconcile: queueing failover", "err", err)
		}
	}
	r.setNecessary(ctx)
	return nil
}

// measureClock writes the clock node and compares its modification time
// with the host's clock (hostClock: the real one, whatever clock the jobs
// fire by) at the middle of the round trip.
func (s *Scheduler) measureClock() {
	sess := s.rc.Session()
	ctx, cancel := context.WithTimeout(sess.Ctx(), s.opts.reshardTimeout)
	defer cancel()
	t0 := s.hostClock()
	st, err := s.rc.Set(ctx, clockNode, []byte(s.opts.serverID), -1)
	if errors.Is(err, regcenter.ErrNoNode) {
		_, err = s.rc.Create(ctx, clockNode, []byte(s.opts.serverID), regcenter.Persistent)
		if err == nil || errors.Is(err, regcenter.ErrNodeExists) {
			t0 = s.hostClock()
			st, err = s.rc.Set(ctx, clockNode, []byte(s.opts.serverID), -1)
		}
	}
	if err != nil {
		s.log.Warn("measuring clock difference with the registry", "err", err)
		return
	}
	t1 := s.hostClock()
	local := t0.Add(t1.Sub(t0) / 2)
	s.clockOffset.Store(int64(local.Sub(st.Mtime)))
	s.clockMeasured.Store(true)
}

// clockError returns ErrClockSkew when the last measured difference
// exceeds max.
func (s *Scheduler) clockError(max time.Duration) error {
	if max <= 0 || !s.clockMeasured.Load() {
		return nil
	}
	off := time.Duration(s.clockOffset.Load())
	if off < 0 {
		off = -off
	}
	// The registry's mtime has millisecond resolution.
	if off > max+time.Millisecond {
		return fmt.Errorf("%w: local clock is %v off (maxTimeDiff %v)", ErrClockSkew, time.Duration(s.clockOffset.Load()).Round(time.Millisecond), max)
	}
	return nil
}
