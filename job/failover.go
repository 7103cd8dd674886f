package job

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shardjob/shardjob/failover"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// prevFire returns the latest fire time of s at or before now, or zero if
// there was none in the past year.
func prevFire(s cron.Schedule, now time.Time) time.Time {
	for back := time.Second; back <= 366*24*time.Hour; back *= 2 {
		t := s.Next(now.Add(-back))
		if t.IsZero() || t.After(now) {
			continue
		}
		for {
			n := s.Next(t)
			if n.IsZero() || n.After(now) {
				return t
			}
			t = n
		}
	}
	return time.Time{}
}

// queueDeparted is the leader's reaction to instances that left while
// holding items: every item of theirs that has not completed the latest
// fire dispatched (one claimed ahead of its time counts: the departed
// instance may have claimed it) is queued for failover, and their
// assignment is cleared in the same transaction so that one departure is
// queued once.
func (r *runner) queueDeparted(ctx context.Context, servers serverSet) error {
	cfg := r.config()
	sched, _, err := cfg.Schedule()
	if err != nil {
		return err
	}
	latest := dueFire(sched, r.s.opts.now(), r.s.opts.fireLead)
	var errs []error
	for _, sv := range servers.names() {
		kids := servers[sv]
		if kids[layout.Status] || !kids[layout.Sharding] {
			continue
		}
		shardPath := r.paths.Flag(sv, layout.Sharding)
		data, st, err := r.rc.Get(ctx, shardPath)
		if err != nil {
			if !errors.Is(err, regcenter.ErrNoNode) {
				errs = append(errs, err)
			}
			continue
		}
		items, err := layout.ParseItems(string(data))
		if err != nil {
			r.log.Warn("garbage assignment of departed server; clearing it", "server", sv, "err", err)
			items = nil
		}
		if len(items) == 0 {
			continue
		}
		var entries []failover.Entry
		for _, it := range items {
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
			entries = append(entries, failover.Entry{Item: it, Fire: since.UnixMilli(), From: sv})
		}
		fence, err := r.elect.Fence()
		if err != nil {
			return err
		}
		// Clearing the departed server's assignment with a version check
		// makes a concurrent second queueing of the same departure fail.
		clear := regcenter.SetOp{Path: shardPath, Data: nil, Version: st.Version}
		if err := failover.NewQueue(r.rc, r.name).Enqueue(ctx, entries, fence, clear); err != nil {
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
		if p := prevFire(sched, now); !p.IsZero() {
			return p
		}
	}
	return now.Truncate(time.Millisecond)
}

// completedFire returns the fire an item last completed (zero if none).
func (r *runner) completedFire(ctx context.Context, item int) (time.Time, error) {
	c, err := r.completedCover(ctx, item)
	return c.through(), err
}

// completedCover reads the item's completed node (zero if none, or
// garbage).
func (r *runner) completedCover(ctx context.Context, item int) (cover, error) {
	rec, err := r.readRecord(ctx, item)
	return rec.cover, err
}

// readRecord reads the item's completed node: what it says ran (nothing if
// there is no node, or garbage in it) and its version, when it exists.
func (r *runner) readRecord(ctx context.Context, item int) (record, error) {
	data, st, err := r.rc.Get(ctx, r.paths.ItemNode(item, layout.Completed))
	if errors.Is(err, regcenter.ErrNoNode) {
		return record{}, nil
	}
	if err != nil {
		return record{}, err
	}
	rec := record{version: st.Version, versioned: true}
	var m completedMark
	if err := json.Unmarshal(data, &m); err != nil || m.Fire <= 0 {
		r.log.Warn("garbage in completed node; treating the item as not completed", "item", item, "data", quoteShort(string(data)), "err", err)
		return rec, nil
	}
	rec.cover = coverOf(m)
	return rec, nil
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
	r.mu.Lock()
	r.fo.queueDirty = false
	r.mu.Unlock()
	items, err := q.Items(ctx)
	if err != nil {
		r.mu.Lock()
		r.fo.queueDirty = true
		r.mu.Unlock()
		r.log.Warn("reading failover queue", "err", err)
		return
	}
	if len(items) > 0 && !r.s.preemptWait(ctx) {
		return
	}
	byFire := map[int64][]int{}
	for _, it := range items {
		r.mu.Lock()
		_, here := r.runs.running[it]
		r.mu.Unlock()
		if it >= cfg.ShardingTotalCount {
			continue
		}
		r.mu.Lock()
		blocked := r.fo.blocked[it]
		r.mu.Unlock()
		if blocked {
			continue // running elsewhere: watched, re-scanned when it ends
		}
		if here {
			// Running here already: claimed once it ends (release kicks
			// the claimer again while the queue is marked dirty).
			r.mu.Lock()
			r.fo.queueDirty = true
			r.mu.Unlock()
			continue
		}
		e, err := q.Claim(ctx, it, r.serverID())
		if err == nil && e.Garbage != nil {
			// Nobody can tell which fire it stood for: pay it as a debt of
			// the latest fire, so it is dequeued instead of stuck forever.
			latest := r.latestFire()
			r.log.Error("garbage failover entry; running the item once for the latest fire", "item", it, "fire", latest, "err", e.Garbage)
			e.Fire = latest.UnixMilli()
		}
		switch {
		case err == nil:
			r.counters.failoverClaims.Add(1)
			r.mu.Lock()
			r.fo.claims[it] = e.Version
			r.mu.Unlock()
			byFire[e.Fire] = append(byFire[e.Fire], it)
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
		todo := r.reserve(its, at, time.Time{}, KindFailover, cfg)
		for _, it := range its {
			if !slices.Contains(todo, it) {
				// Began running here meanwhile: the claim goes back.
				if err := q.Release(ctx, it); err != nil {
					r.log.Warn("giving a failover claim back", "item", it, "err", err)
				}
				r.mu.Lock()
				delete(r.fo.claims, it)
				r.fo.queueDirty = true
				r.mu.Unlock()
			}
		}
		if len(todo) == 0 {
			continue
		}
		r.log.Info("taking over items", "items", todo, "fire", at)
		if !r.goFunc(func() { r.markAndRun(&fire{sess: sess, cfg: cfg, at: at, kind: KindFailover, items: todo}) }) {
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
		var runner string
		data, _, err := r.rc.Get(ctx, r.paths.ItemNode(it, layout.Running))
		var m runningMark
		if err == nil && json.Unmarshal(data, &m) == nil && m.Server != "" && m.Server != r.serverID() {
			runner = m.Server
			// One that has left already (shutting down, or gone and not
			// yet expired) pays nothing more: wait for its mark instead.
			if ok, _, err := r.rc.Exists(ctx, r.paths.Flag(runner, layout.Status)); err != nil || !ok {
				runner = ""
			}
		}
		r.mu.Lock()
		r.fo.blocked[it] = true
		r.mu.Unlock()
		p := r.paths.ItemNode(it, layout.Failover)
		err = r.rc.Multi(ctx, fence, regcenter.DeleteOp{Path: p, Version: -1})
		var me *regcenter.MultiError
		if err != nil && !(errors.As(err, &me) && me.Index == 1 && errors.Is(err, regcenter.ErrNoNode)) {
			r.log.Warn("handing back a failover claim", "item", it, "err", err)
		}
		if runner != "" {
			r.watchGone(r.paths.Flag(runner, layout.Status), it)
		} else {
			r.watchGone(r.paths.ItemNode(it, layout.Running), it)
		}
	}
}

// watchGone re-scans the failover queue once the node at p is gone, and
// unblocks for claiming the items (item >= 0) that waited for it.
func (r *runner) watchGone(p string, item int) {
	gone := func() {
		r.mu.Lock()
		if c, ok := r.fo.watches[p]; ok {
			delete(r.fo.watches, p)
			c()
		}
		for _, it := range r.fo.goneWaiters[p] {
			delete(r.fo.blocked, it)
		}
		delete(r.fo.goneWaiters, p)
		r.fo.queueDirty = true
		r.mu.Unlock()
		r.kick.failover.kick()
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	if item >= 0 && !slices.Contains(r.fo.goneWaiters[p], item) {
		r.fo.goneWaiters[p] = append(r.fo.goneWaiters[p], item)
	}
	if _, ok := r.fo.watches[p]; ok {
		r.mu.Unlock()
		return
	}
	// Registered before the watch can fire: gone() finds and ends it.
	r.fo.watches[p] = func() {}
	r.mu.Unlock()
	cancel := r.onGone(p, gone)
	r.mu.Lock()
	if _, live := r.fo.watches[p]; live && !r.closed {
		r.fo.watches[p] = cancel
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	cancel() // already gone (or stopping) before the watch was recorded
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

// claimState is the failover queue as this instance sees it; under r.mu.
type claimState struct {
	watches     map[string]func() // claim or running nodes whose end re-scans the queue
	blocked     map[int]bool      // failover items running elsewhere: not claimed until they end
	goneWaiters map[string][]int  // blocked items, by the node whose end unblocks them
	claims      map[int]int32     // failover items claimed here: the queue entry's version
	queueDirty  bool              // the failover queue may hold items
}
