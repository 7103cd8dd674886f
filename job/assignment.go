package job

import (
	"slices"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/assigned"
	"github.com/shardjob/shardjob/job/internal/assume"
	"github.com/shardjob/shardjob/regcenter"
)

// The assignment stage of a fire: which items this instance runs, assumed
// from the previous fire's read and proved by the fire's own transaction,
// or read fresh (resharding first when due: reshard.go); and which of them
// were not held throughout since the previous fire, whose records are read
// for gaps.

// errAssignmentMoved: a fire's transaction found that the assignment it
// assumed, or the reshard epoch, changed since they were read.
var errAssignmentMoved = assume.ErrMoved

// cachedAssignment returns the assumption a fire under sess may make, if
// any.
func (r *runner) cachedAssignment(sess *regcenter.Session) (assume.Assignment, bool) {
	return r.cache.Assumed(sess)
}

// forgetAssignment drops the assumption: the next fire reads ZooKeeper.
func (r *runner) forgetAssignment() {
	if r.cache.Forget() {
		r.s.trig.Relead(r.name)
	}
}

// assignment returns this instance's items for a fire, resharding first
// when ZooKeeper says it is due, and remembers what it read for the fires
// after it (see assume.Assignment).
func (r *runner) assignment(sess *regcenter.Session) (assume.Assignment, error) {
	ctx, cancel := r.coordCtx(sess)
	defer cancel()
	// A watch's event from here on may answer a change these reads miss:
	// what they read is then not stored (see assume).
	gen := r.cache.WatchGen()
	// The epoch is read first: a reshard flagged after this read moves it,
	// and the next fire's check fails.
	epoch, err := r.assigned.Epoch(ctx)
	if err != nil {
		return assume.Assignment{}, err
	}
	if err := r.reshard.Await(ctx); err != nil {
		if ctx.Err() == nil || sess.Err() != nil {
			return assume.Assignment{}, err
		}
		r.log.Warn("resharding did not finish in time; firing with the stored assignment", "timeout", r.s.opts.reshardTimeout)
		ctx, cancel = r.coordCtx(sess)
		defer cancel()
		epoch = assigned.Unproved // the next fire reads again
	}
	a, err := r.assigned.Read(ctx, sess, epoch)
	if err != nil {
		return assume.Assignment{}, err
	}
	r.held.ReleaseUnassigned(ctx, sess, a.Items)
	r.assume(a, gen)
	return a, nil
}

// assume stores what a fire read, for the fires after it. An epoch that
// could not be proved (assigned.Unproved) stores nothing. gen is the watches' event count
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
func (r *runner) assume(a assume.Assignment, gen uint64) {
	if a.Epoch <= assigned.Unproved {
		r.forgetAssignment()
		return
	}
	a.Proof = slices.Clip(a.Checks(r.paths, r.serverID()))
	// Every assumption is watched on the sharding node; one with items is
	// watched on the reshard epoch too, so that a fire of held items (or
	// of an unmonitored job) needs no proof (fireAssigned).
	watchEpoch := len(a.Items) > 0 || r.config().Unmonitored
	cancels, relead := r.cache.Assume(a, gen, watchEpoch, r.watchIdle, r.watchEpoch)
	for _, cancel := range cancels {
		cancel()
	}
	if relead {
		r.s.trig.Relead(r.name)
	}
}

// watchIdle arms the watch of this instance's sharding node (see assume),
// and returns its cancel.
func (r *runner) watchIdle() (cancel func()) {
	return r.rc.Watch(r.paths.Flag(r.serverID(), layout.Sharding), regcenter.WatchNode, func(ev regcenter.Event) {
		relead, passed := r.cache.IdleEvent()
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

// watchEpoch arms the watch of the reshard epoch (see assume), and returns
// its cancel.
func (r *runner) watchEpoch() (cancel func()) {
	return r.rc.Watch(r.paths.ShardingEpoch(), regcenter.WatchNode, func(regcenter.Event) {
		if r.cache.EpochEvent() {
			r.s.trig.Relead(r.name)
		}
	})
}

// proveAssignment sends an assumption's checks alone, for a fire that marks
// nothing (no items, or every item still busy with an earlier run): a
// fire must prove its assumption, or an instance whose items stay busy
// would never learn that a reshard moved them. It reports whether the
// assumption still holds.
func (r *runner) proveAssignment(sess *regcenter.Session, checks []regcenter.Op) (bool, error) {
	ctx, cancel := r.coordCtx(sess)
	defer cancel()
	ok, err := r.assigned.Prove(ctx, checks)
	if err == nil && !ok {
		r.forgetAssignment()
	}
	return ok, err
}

// noteEpochFlag is the leader's answer to a reshard flag created without
// moving the epoch (assigned.Reader.MoveEpochForFlag).
func (r *runner) noteEpochFlag() {
	ctx, cancel := r.coordCtx(r.rc.Session())
	defer cancel()
	r.assigned.MoveEpochForFlag(ctx)
}
