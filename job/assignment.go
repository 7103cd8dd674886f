package job

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/internal/parallel"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
)

// The assignment stage of a fire: which items this instance runs, assumed
// from the previous fire's read and proved by the fire's own transaction,
// or read fresh (resharding first when due: reshard.go); and which of them
// were not held throughout since the previous fire, whose records are read
// for gaps.

// errAssignmentMoved: a fire's transaction found that the assignment it
// assumed, or the reshard epoch, changed since they were read.
var errAssignmentMoved = errors.New("assignment or reshard epoch changed")

// assigned is what a fire assumes without reading ZooKeeper: this
// instance's items as of its sharding node's version, with no reshard due
// as of the reshard epoch's version (layout.ShardingEpoch), both read under
// one session. The fire's own transaction checks both versions, so the
// assumption is proved in the same round trip that marks the items running.
type assigned struct {
	sess         *regcenter.Session
	items        []int
	shard, epoch int32
	// shardZxid is the sharding node's creation: a node deleted and made
	// again starts its versions over.
	shardZxid      int64
	shardSeen, set bool // the sharding node existed; the cache is filled
	// watched: watches armed before the read stand for the proof, so a
	// fire sends nothing: on the sharding node for an instance that holds
	// no items, and on the reshard epoch as well for an unmonitored job
	// (see assume).
	watched bool
	// proof is checks, made once when the assumption is stored: every
	// fire on it sends the same.
	proof []regcenter.Op
}

// heldSince reports which of a's items this instance held without a break
// since prev, an earlier assignment read under the same session: all of
// them while no reshard wrote the sharding node, those in both when exactly
// one reshard did (it replaced one list by the other in one write); none
// when more did, or the node was made again, or the session changed (an
// item may have moved away and back in between, and been run, or owed,
// elsewhere).
func (a assigned) heldSince(prev assigned) map[int]bool {
	if !a.sameNode(prev) {
		return nil
	}
	if a.shard != prev.shard && a.shard != prev.shard+1 {
		return nil
	}
	held := make(map[int]bool, len(a.items))
	for _, it := range prev.items {
		held[it] = true
	}
	for it := range held {
		if !slices.Contains(a.items, it) {
			delete(held, it)
		}
	}
	return held
}

// sameNode reports whether a and prev were read from one sharding node
// under one session: the node existed at both reads and was not made
// again in between.
func (a assigned) sameNode(prev assigned) bool {
	return prev.set && prev.sess == a.sess && a.shardSeen && prev.shardSeen && a.shardZxid == prev.shardZxid
}

// sameVersion reports whether a and prev were read from the same version
// of one sharding node: every item of either was held throughout.
func (a assigned) sameVersion(prev assigned) bool {
	return a.sameNode(prev) && a.shard == prev.shard
}

// checks are the transaction's proof that the assumption still holds.
func (a assigned) checks(paths layout.Job, server string) []regcenter.Op {
	ops := []regcenter.Op{regcenter.CheckOp{Path: paths.ShardingEpoch(), Version: a.epoch}}
	// A sharding node that did not exist is not checked: only a reshard
	// creates it, and a reshard is flagged first, which moves the epoch.
	if a.shardSeen {
		ops = append(ops, regcenter.CheckOp{Path: paths.Flag(server, layout.Sharding), Version: a.shard})
	}
	return ops
}

// cachedAssignment returns the assumption a fire under sess may make, if
// any.
func (r *runner) cachedAssignment(sess *regcenter.Session) (assigned, bool) {
	c := &r.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.assumed
	if !a.set || a.sess != sess {
		return assigned{}, false
	}
	a.items = slices.Clone(a.items)
	return a, true
}

// forgetAssignment drops the assumption: the next fire reads ZooKeeper.
func (r *runner) forgetAssignment() {
	r.cache.mu.Lock()
	relead := r.cache.setAssumedLocked(assigned{})
	r.cache.mu.Unlock()
	if relead {
		r.s.trig.Relead(r.name)
	}
}

// setAssumedLocked makes a the assumption of the next fire. It reports
// whether the fire's proof by watches came or went, which changes the
// lead it needs (see quickFire): the caller then tells the trigger
// (Trigger.Relead), without c.mu. c.mu is held.
func (c *assignmentCache) setAssumedLocked(a assigned) (relead bool) {
	c.assumed = a
	watched := a.set && a.watched
	return c.watchedAssumption.Swap(watched) != watched
}

// assignment returns this instance's items for a fire, resharding first
// when ZooKeeper says it is due, and remembers what it read for the fires
// after it (see assigned).
func (r *runner) assignment(sess *regcenter.Session) (assigned, error) {
	ctx, cancel := r.coordCtx(sess)
	defer cancel()
	// A watch's event from here on may answer a change these reads miss:
	// what they read is then not stored (see assume).
	r.cache.mu.Lock()
	gen := r.cache.watchGen
	r.cache.mu.Unlock()
	// The epoch is read first: a reshard flagged after this read moves it,
	// and the next fire's check fails.
	_, epoch, err := r.rc.Exists(ctx, r.paths.ShardingEpoch())
	if err != nil {
		return assigned{}, err
	}
	if err := r.awaitSharding(ctx); err != nil {
		if ctx.Err() == nil || sess.Err() != nil {
			return assigned{}, err
		}
		r.log.Warn("resharding did not finish in time; firing with the stored assignment", "timeout", r.s.opts.reshardTimeout)
		ctx, cancel = r.coordCtx(sess)
		defer cancel()
		epoch.Version = -2 // not proved: the next fire reads again
	}
	for attempt := 0; ; attempt++ {
		p := r.paths.Flag(r.serverID(), layout.Sharding)
		data, st, err := r.rc.Get(ctx, p)
		if errors.Is(err, regcenter.ErrNoNode) {
			a := assigned{sess: sess, epoch: epoch.Version, set: true}
			r.releaseUnassigned(ctx, sess, nil)
			r.assume(a, gen)
			return a, nil
		}
		if err != nil {
			return assigned{}, err
		}
		items, err := layout.ParseItems(string(data))
		if err == nil {
			a := assigned{sess: sess, items: items, shard: st.Version, shardZxid: st.Czxid, shardSeen: true, epoch: epoch.Version, set: true}
			r.releaseUnassigned(ctx, sess, items)
			r.assume(a, gen)
			return a, nil
		}
		if attempt > 0 {
			return assigned{}, fmt.Errorf("garbage in %s after a reshard: %w", p, err)
		}
		// Not written by a leader: ask for a reshard now and wait for it,
		// so that this fire runs with a real assignment.
		r.log.Error("garbage in this instance's assignment; asking the leader to reshard", "node", p, "data", quoteShort(string(data)), "err", err)
		if err := r.requestReshard(ctx); err != nil {
			return assigned{}, err
		}
		if err := r.awaitSharding(ctx); err != nil {
			return assigned{}, err
		}
		epoch.Version = -2 // moved by the request; read again next fire
	}
}

// assume stores what a fire read, for the fires after it. An epoch that
// could not be proved (-2) stores nothing. gen is the watches' event count
// (watchGen) before the read began.
//
// An instance that holds no items would otherwise send its proof alone
// every fire only to learn that nothing changed (two of three instances
// of a one-item job, every second). While it holds none it watches its
// sharding node instead: any event, including the watch's first answer
// once armed, drops the assumption, and an assumption read after the
// watch was armed is proved by it (watched), so such a fire sends nothing;
// a read during which an event came is not stored.
// A reshard that gives it items writes that node. The watch goes when the
// instance holds items again.
//
// An unmonitored job writes nothing per fire, so a proof would be its
// only request: it keeps the watch while it holds items, and watches the
// reshard epoch too, which a due reshard moves. Its fires then send
// nothing, the leader's included (the epoch's event makes its next fire
// read, and reshard). What a proof would add is bounded by the job's own
// terms: without running marks a reshard does not wait for the items'
// previous owner anyway, so the watch's delivery delay only joins a window
// the job already accepts (Config.Unmonitored).
func (r *runner) assume(a assigned, gen uint64) {
	if a.epoch < -1 {
		r.forgetAssignment()
		return
	}
	a.proof = slices.Clip(a.checks(r.paths, r.serverID()))
	unmonitored := r.config().Unmonitored
	// Every assumption is watched on the sharding node; one with items is
	// watched on the reshard epoch too, so that a fire of held items (or
	// of an unmonitored job) needs no proof (fireAssigned).
	watchEpoch := len(a.items) > 0 || unmonitored
	var cancels []func()
	relead := false
	c := &r.cache
	c.mu.Lock()
	defer func() {
		c.mu.Unlock()
		for _, cancel := range cancels {
			if cancel != nil {
				cancel()
			}
		}
		if relead {
			r.s.trig.Relead(r.name)
		}
	}()
	if c.closed {
		return
	}
	if !watchEpoch && c.epochWatch != nil {
		cancels = append(cancels, c.epochWatch)
		c.epochWatch, c.epochArmed = nil, false
	}
	armed := c.idleArmed && (!watchEpoch || c.epochArmed)
	if c.idleWatch == nil {
		c.idleWatch = r.rc.Watch(r.paths.Flag(r.serverID(), layout.Sharding), regcenter.WatchNode, func(ev regcenter.Event) {
			c.mu.Lock()
			c.idleArmed = true
			relead := c.setAssumedLocked(assigned{})
			c.watchGen++
			passed := !c.idlePassed.IsZero()
			c.mu.Unlock()
			if relead {
				r.s.trig.Relead(r.name)
			}
			if passed && (ev.Type == regcenter.EventCreated || ev.Type == regcenter.EventDataChanged) {
				r.goCatchUp()
			}
			// A reshard may have moved items whose marks this instance
			// keeps: the new owner waits for them (hold.go).
			r.kick.holds.Kick()
		})
	}
	if watchEpoch && c.epochWatch == nil {
		c.epochWatch = r.rc.Watch(r.paths.ShardingEpoch(), regcenter.WatchNode, func(regcenter.Event) {
			c.mu.Lock()
			c.epochArmed = true
			relead := c.setAssumedLocked(assigned{})
			c.watchGen++
			c.mu.Unlock()
			if relead {
				r.s.trig.Relead(r.name)
			}
		})
	}
	if c.watchGen != gen {
		// An event came while the fire read: its change may postdate
		// the read. The next fire reads again.
		relead = c.setAssumedLocked(assigned{})
		return
	}
	a.watched = armed
	relead = c.setAssumedLocked(a)
}

// proveAssignment sends an assumption's checks alone, for a fire that marks
// nothing (no items, or every item still busy with an earlier run): a
// fire must prove its assumption, or an instance whose items stay busy
// would never learn that a reshard moved them. It reports whether the
// assumption still holds.
func (r *runner) proveAssignment(sess *regcenter.Session, checks []regcenter.Op) (bool, error) {
	ctx, cancel := r.coordCtx(sess)
	defer cancel()
	err := r.rc.Multi(ctx, checks...)
	var me *regcenter.MultiError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &me):
		r.forgetAssignment()
		return false, nil
	default:
		return false, err
	}
}

// noteEpochFlag is the leader's answer to a reshard flag created without
// moving the epoch (by hand, or by an older version of this package): it
// moves the epoch, so that instances firing on their assumption read again.
func (r *runner) noteEpochFlag() {
	sess := r.rc.Session()
	ctx, cancel := r.coordCtx(sess)
	defer cancel()
	due, flag, err := r.rc.Exists(ctx, r.paths.Necessary())
	if err != nil || !due {
		return
	}
	_, epoch, err := r.rc.Exists(ctx, r.paths.ShardingEpoch())
	if err != nil || epoch.Mzxid >= flag.Czxid {
		return // moved with the flag, or since
	}
	if _, err := r.rc.Set(ctx, r.paths.ShardingEpoch(), nil, -1); err != nil && !errors.Is(err, regcenter.ErrNoNode) && ctx.Err() == nil {
		r.log.Warn("moving the reshard epoch for a flag set by hand", "err", err)
	}
}

// inheritedGaps returns, for the items of this fire that this instance did
// not hold without a break since its previous fire (see heldSince), the
// earliest fire before at that the item has not completed, where there is
// one. A previous owner that died (or lost its session) between fires
// leaves such gaps: the reshard moves its items, and nothing else records
// the fires it owed. It reads ZooKeeper only for items not held
// throughout, so only after a reshard or a new session; what it reads
// replaces what this instance knew of those items' records, which another
// instance may have written meanwhile.
//
// fresh lists the items newly held, gaps or not.
func (r *runner) inheritedGaps(sess *regcenter.Session, at time.Time, a assigned) (gaps map[int]time.Time, fresh []int) {
	cfg := r.config()
	r.cache.mu.Lock()
	prev := r.cache.lastHeld
	r.cache.lastHeld = a
	r.cache.mu.Unlock()
	changed := !slices.Equal(a.items, prev.items)
	if changed || !a.sameVersion(prev) { // the steady state holds what it held
		held := a.heldSince(prev)
		for _, it := range a.items {
			if !held[it] && it >= 0 && it < cfg.ShardingTotalCount {
				fresh = append(fresh, it)
			}
		}
		r.records.Forget(fresh)
	}
	if changed {
		r.s.emit(Event{Kind: EventResharded, Job: r.name, Units: len(a.items), Detail: layout.FormatItems(a.items)})
	}
	if len(fresh) == 0 || cfg.Unmonitored {
		return nil, fresh // steady state: nothing newly held
	}
	// A job that drops missed fires reads no debts and finds no gaps, but
	// still reads the records: the fire itself may have run already on
	// the item's previous owner (see ranBefore).
	skip := cfg.skipsMissed()
	sched, _, err := cfg.Schedule()
	if err != nil {
		return nil, fresh
	}
	before := fireplan.Prev(sched, at.Add(-time.Millisecond))
	if before.IsZero() {
		return nil, fresh
	}
	ctx, cancel := r.coordCtx(sess)
	defer cancel()
	recs := make([]record, len(fresh))
	debts := make([]time.Time, len(fresh))
	errs := make([]error, 2*len(fresh))
	reads := 2 * len(fresh)
	if skip {
		reads = len(fresh)
	}
	parallel.Each(reads, 32, func(i int) {
		if i < len(fresh) {
			recs[i], errs[i] = r.readRecord(ctx, fresh[i])
		} else {
			debts[i-len(fresh)], errs[i] = r.readDebt(ctx, fresh[i-len(fresh)])
		}
	})
	for i, it := range fresh {
		if err := errors.Join(errs[i], errs[len(fresh)+i]); err != nil {
			r.log.Warn("reading an inherited item's record", "item", it, "err", err)
			continue
		}
		r.records.Read(it, recs[i])
		if !debts[i].IsZero() {
			r.owed.SetNode(it, true) // its debt is ours now: paid, the node goes
		}
		if skip {
			continue
		}
		var since time.Time
		if done := recs[i].Through(); !done.IsZero() && done.Before(before) {
			since = sched.Next(done) // nothing ran since done
		}
		if d := debts[i]; !d.IsZero() && !d.After(before) && (since.IsZero() || d.Before(since)) {
			// An instance that owed the item a run left the debt behind
			// (it died, or a reshard moved the item): the make-up run
			// runs what of it the record does not list.
			since = d
		}
		if since.IsZero() || since.After(before) {
			continue
		}
		if gaps == nil {
			gaps = map[int]time.Time{}
		}
		gaps[it] = since
		// The previous owner may have run the gap's fires through the one
		// before this fire, unrecorded (it crashed with failover off).
		r.inherit.note(it, before)
	}
	return gaps, fresh
}

// readDebt reads the item's misfire node: the earliest fire an instance
// that could not run the item (it was running elsewhere) owed it, if any.
// The node outlives that instance, whose debt was otherwise in its memory
// only.
func (r *runner) readDebt(ctx context.Context, item int) (time.Time, error) {
	p := r.paths.ItemNode(item, layout.Misfire)
	data, st, err := r.rc.Get(ctx, p)
	if errors.Is(err, regcenter.ErrNoNode) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	m, err := stored.DecodeMisfire(data)
	if err != nil {
		r.reportBad(p, st, data, "garbage in misfire node; ignored", "item", item, "err", err)
		return time.Time{}, nil
	}
	return time.UnixMilli(m.Since), nil
}

// assignmentCache is what the next fire may assume of this instance's
// assignment, and the watches that prove it. It owns its lock, taken only
// in this file; fires that change lastHeld are ordered by the fire order (fireOrder).
type assignmentCache struct {
	mu       sync.Mutex
	closed   bool     // the runner stops: no new watch (see close)
	assumed  assigned // what the next fire may assume
	lastHeld assigned // the assignment of the latest scheduled fire here
	// watchedAssumption: assumed is proved by watches (assigned.watched),
	// so an unmonitored job's next fire sends no request (quickFire). Set
	// with assumed, under mu; read by the trigger without it.
	watchedAssumption atomic.Bool
	// idleWatch watches this instance's sharding node while it holds no
	// items or the job is unmonitored, epochWatch the reshard epoch while
	// the job is unmonitored (see assume); each armed once its first
	// answer came.
	idleWatch, epochWatch func()
	idleArmed, epochArmed bool
	// watchGen counts their events: a read that saw one begin after it
	// started may have missed the change it answers.
	watchGen uint64
	// idlePassed is the latest fire this instance let pass on the idle
	// watch's word, until a later fire starts (see catchUpIdle).
	idlePassed time.Time
}

// held returns the assignment of the latest scheduled fire here, and
// restoreHeld puts back one returned before: a fire whose proof failed
// (errAssignmentMoved) reads its assignment again, and what it holds
// anew must be compared with what the previous fire held, not with the
// assignment it could not prove — or an item gained at that fire would
// count as held since, and the gap its previous owner left (found by the
// failed attempt, and undone with it) would not be made up.
func (c *assignmentCache) held() assigned {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastHeld
}

func (c *assignmentCache) restoreHeld(a assigned) {
	c.mu.Lock()
	c.lastHeld = a
	c.mu.Unlock()
}

// passIdle notes the fire at, let pass on the idle watch's word (see
// catchUpIdle); a zero at clears the note, as a fire that reads for
// itself does.
func (c *assignmentCache) passIdle(at time.Time) {
	c.mu.Lock()
	c.idlePassed = at
	c.mu.Unlock()
}

// takeIdlePass returns and clears the fire let pass idle, if any.
func (c *assignmentCache) takeIdlePass() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	at := c.idlePassed
	c.idlePassed = time.Time{}
	return at
}

// close keeps assume from watching again and returns the cancels of the
// watches it made, for the runner's stop.
func (c *assignmentCache) close() []func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	cancels := []func(){c.idleWatch, c.epochWatch}
	c.idleWatch, c.epochWatch = nil, nil
	return cancels
}

// keepAssigned removes from held the items the next fire under sess may
// not assume are this instance's (all of them when it may assume nothing:
// the assumption was dropped, or made under another session). It filters
// in place: a one-item completion builds no set of its own.
func (c *assignmentCache) keepAssigned(sess *regcenter.Session, held map[int]bool) {
	if len(held) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.assumed
	if !a.set || a.sess != sess || len(a.items) == 0 {
		clear(held)
		return
	}
	if len(held) <= 8 {
		for it := range held {
			if !slices.Contains(a.items, it) {
				delete(held, it)
			}
		}
		return
	}
	mine := make(map[int]bool, len(a.items))
	for _, it := range a.items {
		mine[it] = true
	}
	for it := range held {
		if !mine[it] {
			delete(held, it)
		}
	}
}
