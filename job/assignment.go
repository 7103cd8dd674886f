package job

import (
	"errors"
	"fmt"
	"slices"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

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
}

// heldSince reports which of a's items this instance held without a break
// since prev, an earlier assignment read under the same session: all of
// them while no reshard wrote the sharding node, those in both when exactly
// one reshard did (it replaced one list by the other in one write); none
// when more did, or the node was made again, or the session changed (an
// item may have moved away and back in between, and been run, or owed,
// elsewhere).
func (a assigned) heldSince(prev assigned) map[int]bool {
	if !prev.set || prev.sess != a.sess || !a.shardSeen || !prev.shardSeen || a.shardZxid != prev.shardZxid {
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
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.assumed
	if !a.set || a.sess != sess {
		return assigned{}, false
	}
	a.items = slices.Clone(a.items)
	return a, true
}

// forgetAssignment drops the assumption: the next fire reads ZooKeeper.
func (r *runner) forgetAssignment() {
	r.mu.Lock()
	r.assumed = assigned{}
	r.mu.Unlock()
}

// assignment returns this instance's items for a fire, resharding first
// when ZooKeeper says it is due, and remembers what it read for the fires
// after it (see assigned).
func (r *runner) assignment(sess *regcenter.Session) (assigned, error) {
	ctx, cancel := r.coordCtx(sess)
	defer cancel()
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
			r.assume(a)
			return a, nil
		}
		if err != nil {
			return assigned{}, err
		}
		items, err := layout.ParseItems(string(data))
		if err == nil {
			a := assigned{sess: sess, items: items, shard: st.Version, shardZxid: st.Czxid, shardSeen: true, epoch: epoch.Version, set: true}
			r.assume(a)
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
// could not be proved (-2) stores nothing.
func (r *runner) assume(a assigned) {
	if a.epoch < -1 {
		r.forgetAssignment()
		return
	}
	r.mu.Lock()
	r.assumed = a
	r.mu.Unlock()
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
