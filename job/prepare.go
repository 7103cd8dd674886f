package job

import (
	"context"
	"fmt"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

// prepare makes this instance ready to run the job's items: it watches the
// disabled items and joins the election (the first candidate makes the
// latch's parent: an idle job's tree has none). The latch node it creates also
// fences this instance's completions (election.SessionFence), and a fire
// needs a leader to reshard first. Until then an idle job costs ZooKeeper
// two watches (config, flags) and nothing else. It runs at registration
// for a job with failover on (its leader must notice a departed instance
// between fires) or a fire due within prepareAhead; otherwise prepareAhead
// before the next fire, before a trigger, and at the latest before the
// fire itself. Once prepared, an instance stays in the election.
func (r *runner) prepare(ctx context.Context) error {
	return r.prep.Do(func() { r.watchDisabledItems(ctx) }, func() error { return r.campaign(ctx) })
}

// campaign joins the job's election.
func (r *runner) campaign(ctx context.Context) error {
	if err := r.elect.Campaign(ctx); err != nil {
		return fmt.Errorf("job %q: %w", r.name, err)
	}
	return nil
}

// prepareSync is prepare bounded by the reshard timeout, for a run about
// to start.
func (r *runner) prepareSync() error {
	if r.prep.Done() {
		return nil
	}
	ctx, cancel := context.WithTimeout(r.rc.Session().Ctx(), r.s.opts.reshardTimeout)
	defer cancel()
	return r.prepare(ctx)
}

// prepareNow is prepare on a goroutine of its own, bounded by the reshard
// timeout; a failure is retried by whatever needs the job next (a fire, a
// trigger, a new session, the reconcile loop).
func (r *runner) prepareNow() {
	if r.prep.Done() {
		return
	}
	r.goFunc(func() {
		sess := r.rc.Session()
		ctx, cancel := context.WithTimeout(sess.Ctx(), r.s.opts.reshardTimeout)
		defer cancel()
		if err := r.prepare(ctx); err != nil && sess.Err() == nil {
			r.log.Warn("preparing to run", "err", err)
		}
	})
}

// campaignIfPrepared joins the election under the current session if this
// instance takes part in it (re-registration after a new session).
func (r *runner) campaignIfPrepared(ctx context.Context) error {
	return r.prep.Again(func() error { return r.campaign(ctx) })
}

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
	r.prep.Before(r.s.clock, r.s.opts.now(), next, prepareAhead, r.book.Stopping, r.prepareNow)
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
		if r.watch.Armed(watchQueue) {
			return
		}
		dirty := func() {
			r.fo.SetDirty(true)
			r.kick.failover.Kick()
		}
		st, cancel, err := r.rc.WatchNow(ctx, r.paths.FailoverItems(), regcenter.WatchChildren, func(regcenter.Event) { dirty() })
		r.keepWatch(watchQueue, cancel)
		if err != nil {
			r.log.Debug("failover queue watch deferred; it reads the queue once armed", "err", err)
			return
		}
		if len(st.Children) > 0 {
			dirty()
		}
	})
}
