package job

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

// preparation is whether this instance is ready to run the job's items
// (see prepare): it watches the job's disabled items and takes part in its
// election. It owns its locks, taken only in this file.
type preparation struct {
	// done is set once prepare has succeeded.
	done atomic.Bool
	// mu serialises prepare; campaigning, under it, is set once prepare
	// has begun, so that re-registration joins the election too.
	mu          sync.Mutex
	campaigning bool
	// timer, under timerMu, runs prepare ahead of the next fire.
	timerMu sync.Mutex
	timer   Timer // on the scheduler's clock
}

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
	if r.prep.done.Load() {
		return nil
	}
	r.prep.mu.Lock()
	defer r.prep.mu.Unlock()
	if r.prep.done.Load() {
		return nil
	}
	r.prep.campaigning = true
	r.watchDisabledItems(ctx)
	if err := r.elect.Campaign(ctx); err != nil {
		return fmt.Errorf("job %q: %w", r.name, err)
	}
	r.prep.done.Store(true)
	return nil
}

// prepareSync is prepare bounded by the reshard timeout, for a run about
// to start.
func (r *runner) prepareSync() error {
	if r.prep.done.Load() {
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
	if r.prep.done.Load() {
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
	r.prep.mu.Lock()
	defer r.prep.mu.Unlock()
	if !r.prep.campaigning {
		return nil
	}
	if err := r.elect.Campaign(ctx); err != nil {
		return fmt.Errorf("job %q: %w", r.name, err)
	}
	return nil
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

// prepareBefore arranges for prepare to run prepareAhead before next.
func (r *runner) prepareBefore(next time.Time) {
	if r.prep.done.Load() || next.IsZero() {
		return
	}
	at := next.Add(-prepareAhead)
	d := at.Sub(r.s.opts.now())
	r.prep.timerMu.Lock()
	if r.prep.timer != nil {
		r.prep.timer.Stop()
		r.prep.timer = nil
	}
	// Checked under prep.timerMu: stop sets stopping before it cancels the
	// timer under prep.timerMu, so a timer set here is either cancelled or never
	// set (a forgotten one would keep the runner alive until it fires).
	if r.book.Stopping() {
		r.prep.timerMu.Unlock()
		return
	}
	if d > 0 {
		r.prep.timer = r.s.clock.AfterFunc(at, r.prepareNow)
	}
	r.prep.timerMu.Unlock()
	if d <= 0 {
		r.prepareNow()
	}
}

// stopPrepare cancels a pending prepareBefore.
func (r *runner) stopPrepare() {
	r.prep.timerMu.Lock()
	if r.prep.timer != nil {
		r.prep.timer.Stop()
		r.prep.timer = nil
	}
	r.prep.timerMu.Unlock()
}

// watchQueue watches the failover queue (jobs with failover on); queued
// items found by the arming request are claimed at once. Start and a
// config change turning failover on may call it at the same time: prep.mu
// makes one of them arm the watch.
func (r *runner) watchQueue(ctx context.Context) {
	r.prep.mu.Lock()
	defer r.prep.mu.Unlock()
	if r.watch.armed(&r.watch.queue) {
		return
	}
	dirty := func() {
		r.fo.SetDirty(true)
		r.kick.failover.Kick()
	}
	st, cancel, err := r.rc.WatchNow(ctx, r.paths.FailoverItems(), regcenter.WatchChildren, func(regcenter.Event) { dirty() })
	r.keepWatch(&r.watch.queue, cancel)
	if err != nil {
		r.log.Debug("failover queue watch deferred; it reads the queue once armed", "err", err)
		return
	}
	if len(st.Children) > 0 {
		dirty()
	}
}
