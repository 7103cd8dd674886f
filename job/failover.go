package job

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/shardjob/shardjob/failover"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/book"
	claims "github.com/shardjob/shardjob/job/internal/failover"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/reshard"
	"github.com/shardjob/shardjob/regcenter"
)

// queueDeparted is the leader's reaction to instances that left while
// holding items: every item of theirs that has not completed the latest
// fire dispatched (one claimed ahead of its time counts: the departed
// instance may have claimed it) is queued for failover, and their
// assignment is cleared in the same transaction so that one departure is
// queued once.
func (r *runner) queueDeparted(ctx context.Context, servers reshard.Servers) error {
	cfg := r.config()
	sched, _, err := cfg.Schedule()
	if err != nil {
		return err
	}
	latest := fireplan.Due(sched, r.s.opts.now(), r.s.opts.fireLead)
	var errs []error
	for _, sv := range servers.Names() {
		kids := servers[sv]
		if kids[layout.Status] || !kids[layout.Sharding] {
			continue
		}
		d, err := claims.ReadDeparted(ctx, r.rc, r.paths, sv)
		if err != nil {
			if !errors.Is(err, regcenter.ErrNoNode) {
				errs = append(errs, err)
			}
			continue
		}
		if d.Garbage != nil {
			r.log.Warn("garbage assignment of departed server; clearing it", "server", sv, "err", d.Garbage)
		}
		if len(d.Items) == 0 {
			continue
		}
		var entries []failover.Entry
		for _, it := range d.Items {
			if it >= cfg.ShardingTotalCount || latest.IsZero() {
				continue
			}
			done, err := r.completedFire(ctx, it)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if !done.IsZero() && !done.Before(latest) {
				continue // completed the latest fire: nothing to redo
			}
			since := latest
			if !done.IsZero() {
				if n := sched.Next(done); !n.IsZero() && n.Before(latest) {
					since = n
				}
			}
			// The departed instance may have started any fire due before
			// it left, up to the latest: its runs in flight, and those whose
			// completion was (see ShardingContext.MayHaveRunThrough).
			entries = append(entries, failover.Entry{Item: it, Fire: since.UnixMilli(), From: sv, MayHaveRun: latest.UnixMilli()})
		}
		fence, err := r.elect.Fence()
		if err != nil {
			return err
		}
		// Clearing the departed server's assignment with a version check
		// makes a concurrent second queueing of the same departure fail.
		if err := claims.QueueDeparted(ctx, r.rc, r.name, d, entries, fence); err != nil {
			if errors.Is(err, regcenter.ErrBadVersion) {
				continue
			}
			errs = append(errs, err)
			continue
		}
		if len(entries) > 0 {
			r.log.Info("queued items of a departed instance for failover", "server", sv, "items", len(entries))
		}
	}
	return errors.Join(errs...)
}

// latestFire returns the job's latest fire at or before now (now itself
// when the schedule has none in the past year).
func (r *runner) latestFire() time.Time {
	now := r.s.opts.now()
	if sched, _, err := r.config().Schedule(); err == nil {
		if p := fireplan.Prev(sched, now); !p.IsZero() {
			return p
		}
	}
	return now.Truncate(time.Millisecond)
}

// claimFailover runs on every instance of a failover job when the queue
// changes or an item is released here: it claims queued items and runs them
// at once. Unlike ElasticJob, an instance need not be idle to take failover
// work: on a cluster whose items run back to back no instance ever is, and
// the queue would starve. An item already running here is left for later.
func (r *runner) claimFailover() {
	cfg := r.config()
	if !cfg.Failover {
		return
	}
	sess, ok := r.readyToFire()
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(sess.Ctx(), r.s.opts.reshardTimeout)
	defer cancel()
	q := failover.NewQueue(r.rc, r.name)
	r.fo.SetDirty(false)
	items, err := q.Items(ctx)
	if err != nil {
		r.fo.SetDirty(true)
		r.log.Warn("reading failover queue", "err", err)
		return
	}
	if len(items) > 0 && !r.s.preemptWait(ctx) {
		return
	}
	byFire := map[int64][]int{}
	var mayHaveRun map[int]time.Time  // by item: the latest fire its previous owner may have run
	var failed map[int]failedAttempts // by item: the attempts of its fire that failed on its previous owner
	for _, it := range items {
		here := r.book.IsRunning(it)
		if it >= cfg.ShardingTotalCount {
			continue
		}
		if r.fo.IsBlocked(it) {
			continue // running elsewhere: watched, re-scanned when it ends
		}
		if here {
			// Running here already: claimed once it ends (release kicks
			// the claimer again while the queue is marked dirty).
			r.fo.SetDirty(true)
			continue
		}
		e, err := q.Claim(ctx, it, r.serverID())
		if err == nil && e.Garbage != nil {
			// Nobody can tell which fire it stood for: pay it as a debt of
			// the latest fire, so it is dequeued instead of stuck forever.
			latest := r.latestFire()
			r.log.Error("garbage failover entry; running the item once for the latest fire", "item", it, "fire", latest, "err", e.Garbage)
			e.Fire, e.MayHaveRun = latest.UnixMilli(), latest.UnixMilli()
		}
		switch {
		case err == nil:
			r.counters.failoverClaims.Add(1)
			r.fo.Claimed(it, e.Version)
			byFire[e.Fire] = append(byFire[e.Fire], it)
			if e.MayHaveRun > 0 {
				if mayHaveRun == nil {
					mayHaveRun = map[int]time.Time{}
				}
				mayHaveRun[it] = time.UnixMilli(e.MayHaveRun)
			}
			if e.Attempts > 0 {
				if failed == nil {
					failed = map[int]failedAttempts{}
				}
				failed[it] = failedAttempts{fire: time.UnixMilli(e.Fire), n: e.Attempts}
			}
		case errors.Is(err, failover.ErrClaimed):
			r.watchClaim(it)
		case errors.Is(err, failover.ErrNotQueued):
		default:
			r.log.Warn("claiming failover item", "item", it, "err", err)
		}
	}
	for ms, its := range byFire {
		at := time.UnixMilli(ms)
		// Reserved before returning, so that a misfire run started right
		// after this (see release) cannot take the item first.
		todo := r.book.Reserve(cfg.book, its, at, time.Time{}, book.Failover, r.flags.disabledItems())
		for _, it := range its {
			if !slices.Contains(todo, it) {
				// Began running here meanwhile: the claim goes back.
				if err := q.Release(ctx, it); err != nil {
					r.log.Warn("giving a failover claim back", "item", it, "err", err)
				}
				r.fo.Unclaim([]int{it})
			}
		}
		if len(todo) == 0 {
			continue
		}
		r.log.Info("taking over items", "items", todo, "fire", at)
		f := &fire{sess: sess, cfg: cfg, at: at, kind: KindFailover, items: todo, mayHaveRun: mayHaveRun, failedAttempts: failed}
		if !r.goFunc(func() { r.markAndRun(f) }) {
			r.release(todo)
		}
	}
}

// watchClaim re-scans the queue when another instance's claim on item
// disappears (its claimer died before finishing).
func (r *runner) watchClaim(item int) {
	r.watchGone(r.paths.ItemNode(item, layout.Failover), -1)
}

// handBack returns the claims on items whose failover run could not start
// because they are running elsewhere (typically on their current owner):
// the claim is deleted, so the queue entry stays for whoever can run the
// item, and this instance does not claim the item again until its running
// mark is gone. Holding the claim while waiting would starve the entry: an
// owner that runs the item back to back re-marks it before a remote waiter
// can, and nobody else may claim it. The deletes are fenced on sess.
func (r *runner) handBack(ctx context.Context, sess *regcenter.Session, items []int) {
	fence, ok := r.elect.SessionFence(sess)
	if !ok {
		return // the claims are ephemeral nodes of a generation that ended
	}
	for _, it := range items {
		// Held off while the instance running the item is registered: it
		// pays the entry itself when its run ends (see release). Racing it
		// for the running mark each time it is deleted would be lost, over
		// and over, to the instance that re-marks its own item.
		wait := claims.WaitFor(ctx, r.rc, r.paths, it, r.serverID())
		r.fo.Block(it)
		if err := claims.HandBack(ctx, r.rc, r.paths, it, fence); err != nil {
			r.log.Warn("handing back a failover claim", "item", it, "err", err)
		}
		r.watchGone(wait, it)
	}
}

// watchGone re-scans the failover queue once the node at p is gone, and
// unblocks for claiming the items (item >= 0) that waited for it.
func (r *runner) watchGone(p string, item int) {
	r.fo.WatchGone(p, item, r.onGone, r.kick.failover.Kick)
}

// onGone calls fn on a runner goroutine when the node at p is deleted, or
// is found absent when the watch is armed or re-armed after a new session
// (looked at once per resync: never a loop). It returns the watch's cancel.
func (r *runner) onGone(p string, fn func()) (cancel func()) {
	return r.rc.Watch(p, regcenter.WatchNode, func(ev regcenter.Event) {
		switch ev.Type {
		case regcenter.EventDeleted:
			r.goFunc(fn)
		case regcenter.EventResync:
			r.goFunc(func() {
				sess := r.rc.Session()
				ctx, cancel := r.coordCtx(sess)
				defer cancel()
				if ok, _, err := r.rc.Exists(ctx, p); err == nil && !ok {
					fn()
				}
			})
		}
	})
}
