package job

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/shardjob/shardjob/failover"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/book"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/reshard"
	"github.com/shardjob/shardjob/job/internal/stored"
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
	r.fo.setDirty(false)
	items, err := q.Items(ctx)
	if err != nil {
		r.fo.setDirty(true)
		r.log.Warn("reading failover queue", "err", err)
		return
	}
	if len(items) > 0 && !r.s.preemptWait(ctx) {
		return
	}
	byFire := map[int64][]int{}
	var mayHaveRun map[int]time.Time // by item: the latest fire its previous owner may have run
	for _, it := range items {
		here := r.book.IsRunning(it)
		if it >= cfg.ShardingTotalCount {
			continue
		}
		if r.fo.isBlocked(it) {
			continue // running elsewhere: watched, re-scanned when it ends
		}
		if here {
			// Running here already: claimed once it ends (release kicks
			// the claimer again while the queue is marked dirty).
			r.fo.setDirty(true)
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
			r.fo.claimed(it, e.Version)
			byFire[e.Fire] = append(byFire[e.Fire], it)
			if e.MayHaveRun > 0 {
				if mayHaveRun == nil {
					mayHaveRun = map[int]time.Time{}
				}
				mayHaveRun[it] = time.UnixMilli(e.MayHaveRun)
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
				r.fo.unclaim([]int{it})
			}
		}
		if len(todo) == 0 {
			continue
		}
		r.log.Info("taking over items", "items", todo, "fire", at)
		f := &fire{sess: sess, cfg: cfg, at: at, kind: KindFailover, items: todo, mayHaveRun: mayHaveRun}
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
		var runner string
		data, _, err := r.rc.Get(ctx, r.paths.ItemNode(it, layout.Running))
		if m, derr := stored.DecodeRunning(data); err == nil && derr == nil && m.Server != r.serverID() {
			runner = m.Server
			// One that has left already (shutting down, or gone and not
			// yet expired) pays nothing more: wait for its mark instead.
			if ok, _, err := r.rc.Exists(ctx, r.paths.Flag(runner, layout.Status)); err != nil || !ok {
				runner = ""
			}
		}
		r.fo.block(it)
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
	fo := &r.fo
	gone := func() {
		fo.mu.Lock()
		if c, ok := fo.watches[p]; ok {
			delete(fo.watches, p)
			c()
		}
		for _, it := range fo.goneWaiters[p] {
			delete(fo.blocked, it)
		}
		delete(fo.goneWaiters, p)
		fo.queueDirty = true
		fo.mu.Unlock()
		r.kick.failover.Kick()
	}
	fo.mu.Lock()
	if fo.closed {
		fo.mu.Unlock()
		return
	}
	if item >= 0 && !slices.Contains(fo.goneWaiters[p], item) {
		fo.goneWaiters[p] = append(fo.goneWaiters[p], item)
	}
	if _, ok := fo.watches[p]; ok {
		fo.mu.Unlock()
		return
	}
	// Registered before the watch can fire: gone() finds and ends it.
	fo.watches[p] = func() {}
	fo.mu.Unlock()
	cancel := r.onGone(p, gone)
	fo.mu.Lock()
	if _, live := fo.watches[p]; live && !fo.closed {
		fo.watches[p] = cancel
		fo.mu.Unlock()
		return
	}
	fo.mu.Unlock()
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

// claimState is the failover queue as this instance sees it. It owns its
// lock, taken only in this file.
type claimState struct {
	mu          sync.Mutex
	closed      bool              // the runner stops: no new watch (see close)
	watches     map[string]func() // claim or running nodes whose end re-scans the queue
	blocked     map[int]bool      // failover items running elsewhere: not claimed until they end
	goneWaiters map[string][]int  // blocked items, by the node whose end unblocks them
	claims      map[int]int32     // failover items claimed here: the queue entry's version
	queueDirty  bool              // the failover queue may hold items
}

func newClaimState() claimState {
	return claimState{watches: map[string]func(){}, blocked: map[int]bool{}, goneWaiters: map[string][]int{}, claims: map[int]int32{}}
}

// setDirty marks the queue as possibly holding items for this instance
// (or, false, as just read).
func (c *claimState) setDirty(dirty bool) {
	c.mu.Lock()
	c.queueDirty = dirty
	c.mu.Unlock()
}

// dirty reports whether the queue may hold items for this instance.
func (c *claimState) dirty() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queueDirty
}

// isBlocked reports whether item runs elsewhere: not claimed until it
// ends (see handBack).
func (c *claimState) isBlocked(item int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.blocked[item]
}

// block keeps item from being claimed until the node it waits for is gone
// (see watchGone).
func (c *claimState) block(item int) {
	c.mu.Lock()
	c.blocked[item] = true
	c.mu.Unlock()
}

// unblock lets items be claimed again: they ran here.
func (c *claimState) unblock(items []int) {
	c.mu.Lock()
	for _, it := range items {
		delete(c.blocked, it)
	}
	c.mu.Unlock()
}

// claimed notes this instance's claim on item's queue entry, read at
// version.
func (c *claimState) claimed(item int, version int32) {
	c.mu.Lock()
	c.claims[item] = version
	c.mu.Unlock()
}

// claimVersion is the version of item's queue entry that this instance's
// claim read, or -1 (any) without a claim.
func (c *claimState) claimVersion(item int) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.claims[item]; ok {
		return v
	}
	return -1
}

// unclaim drops this instance's claims on items (their runs ended, or the
// claims went back): the entries may still be queued, e.g. moved back to
// an earlier fire meanwhile, so the queue is marked dirty if any was
// claimed.
func (c *claimState) unclaim(items []int) {
	c.mu.Lock()
	for _, it := range items {
		if _, ok := c.claims[it]; ok {
			delete(c.claims, it)
			c.queueDirty = true
		}
	}
	c.mu.Unlock()
}

// close keeps watchGone from watching again and returns the cancels of
// the watches it made, for the runner's stop.
func (c *claimState) close() []func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	cancels := make([]func(), 0, len(c.watches))
	for _, w := range c.watches {
		cancels = append(cancels, w)
	}
	c.watches = map[string]func(){}
	return cancels
}
