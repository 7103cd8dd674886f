package job

import (
	"context"
	"time"

	"github.com/shardjob/shardjob/job/internal/registration"
	"github.com/shardjob/shardjob/regcenter"
)

// prepare makes this instance ready to run the job's items
// (job/internal/prepare's Prep, its steps wired in wirePreparation): it watches
// the disabled items and joins the election (the first candidate makes
// the latch's parent: an idle job's tree has none). The latch node it
// creates also fences this instance's completions
// (election.SessionFence), and a fire needs a leader to reshard first.
// Until then an idle job costs ZooKeeper two watches (config, flags) and
// nothing else. It runs at registration for a job with failover on (its
// leader must notice a departed instance between fires) or a fire due
// within prepareAhead; otherwise prepareAhead before the next fire
// (prepareBefore), before a trigger, and at the latest before the fire
// itself (prepareSync). Once prepared, an instance stays in the election.
func (r *runner) prepare(ctx context.Context) error { return r.prep.Prepare(ctx) }

// prepareSync is prepare bounded by the reshard timeout, for a run about
// to start (prepare.Prep.Sync).
func (r *runner) prepareSync() error { return r.prep.Sync() }

// fireWithin reports whether cfg's next fire is due within d.
func (r *runner) fireWithin(cfg *spec, d time.Duration) bool {
	sched, _, err := cfg.Schedule()
	if err != nil || cfg.Disabled {
		return false
	}
	now := r.s.opts.now()
	next := sched.Next(now)
	return !next.IsZero() && next.Sub(now) <= d
}

// prepareBefore arranges for prepare to run prepareAhead before next
// (stop sets stopping before it cancels the timer: see prepare.Prep's
// Before).
func (r *runner) prepareBefore(next time.Time) {
	r.prep.Before(r.s.clock, r.s.opts.now(), next, prepareAhead, r.book.Stopping, r.prep.Now)
}

// stopPrepare cancels a pending prepareBefore.
func (r *runner) stopPrepare() { r.prep.Stop() }

// watchQueue watches the failover queue (jobs with failover on); queued
// items found by the arming request are claimed at once. Start and a
// config change turning failover on may call it at the same time: the
// preparation's lock (prepare.Prep's Serially) makes one of them arm the
// watch.
func (r *runner) watchQueue(ctx context.Context) {
	r.prep.Serially(func() {
		if r.watch.Armed(registration.WatchQueue) {
			return
		}
		dirty := func() {
			r.active().fo.SetDirty(true)
			r.kick.Kick(kickFailover)
		}
		st, ok := r.watch.Arm(ctx, r.rc, registration.WatchQueue, r.paths.FailoverItems(), regcenter.WatchChildren, dirty,
			r.log, "failover queue watch deferred; it reads the queue once armed")
		if !ok {
			return
		}
		if len(st.Children) > 0 {
			dirty()
		}
	})
}
