package assume

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// Assignment is what a fire assumes without reading the registry: this
// instance's items as of its sharding node's version, with no reshard due
// as of the reshard epoch's version (layout.ShardingEpoch), both read under
// one session. The fire's own transaction checks both versions, so the
// assumption is proved in the same round trip that marks the items running.
type Assignment struct {
	Sess         *regcenter.Session
	Items        []int
	Shard, Epoch int32
	// ShardZxid is the sharding node's creation: a node deleted and made
	// again starts its versions over.
	ShardZxid int64
	// ShardSeen: the sharding node existed. Set: the value was filled (the
	// zero Assignment assumes nothing).
	ShardSeen, Set bool
	// Written is when the sharding node was last written (its Mtime: the
	// reshard that gave its items), and Began when the job's tree was made
	// (the reshard epoch's Ctime); zero where the registry does not say.
	// An item gained with no record owes the fire that reshard came at
	// (inherit.Job.Since), never one before the job.
	Written, Began time.Time
	// Watched: watches armed before the read stand for the proof, so a
	// fire sends nothing: on the sharding node for an instance that holds
	// no items, and on the reshard epoch as well for an unmonitored job.
	Watched bool
	// Proof is Checks, made once when the assumption is stored: every
	// fire on it sends the same.
	Proof []regcenter.Op
}

// HeldSince reports which of a's items this instance held without a break
// since prev, an earlier assignment read under the same session: all of
// them while no reshard wrote the sharding node, those in both when exactly
// one reshard did (it replaced one list by the other in one write); none
// when more did, or the node was made again, or the session changed (an
// item may have moved away and back in between, and been run, or owed,
// elsewhere).
func (a Assignment) HeldSince(prev Assignment) map[int]bool {
	if !a.SameNode(prev) {
		return nil
	}
	if a.Shard != prev.Shard && a.Shard != prev.Shard+1 {
		return nil
	}
	held := make(map[int]bool, len(a.Items))
	for _, it := range prev.Items {
		held[it] = true
	}
	for it := range held {
		if !slices.Contains(a.Items, it) {
			delete(held, it)
		}
	}
	return held
}

// SameNode reports whether a and prev were read from one sharding node
// under one session: the node existed at both reads and was not made
// again in between.
func (a Assignment) SameNode(prev Assignment) bool {
	return prev.Set && prev.Sess == a.Sess && a.ShardSeen && prev.ShardSeen && a.ShardZxid == prev.ShardZxid
}

// SameVersion reports whether a and prev were read from the same version
// of one sharding node: every item of either was held throughout.
func (a Assignment) SameVersion(prev Assignment) bool {
	return a.SameNode(prev) && a.Shard == prev.Shard
}

// Checks are a transaction's proof that the assumption still holds, for
// the job at paths on server.
func (a Assignment) Checks(paths layout.Job, server string) []regcenter.Op {
	ops := []regcenter.Op{regcenter.CheckOp{Path: paths.ShardingEpoch(), Version: a.Epoch}}
	// A sharding node that did not exist is not checked: only a reshard
	// creates it, and a reshard is flagged first, which moves the epoch.
	if a.ShardSeen {
		ops = append(ops, regcenter.CheckOp{Path: paths.Flag(server, layout.Sharding), Version: a.Shard})
	}
	return ops
}

// Cache is what the next fire may assume of this instance's assignment,
// and the state of the watches that prove it: the sharding node's (the
// idle watch) and the reshard epoch's. Its zero value is ready. A change
// of whether the assumption is proved by watches changes the lead a fire
// needs: the methods that may change it report relead, for the caller to
// tell the trigger, without the lock.
type Cache struct {
	mu       sync.Mutex
	closed   bool       // the runner stops: no new watch (see Close)
	assumed  Assignment // what the next fire may assume
	lastHeld Assignment // the assignment of the latest scheduled fire here
	// watchedAssumption: assumed is proved by watches (Watched), so an
	// unmonitored job's next fire sends no request. Set with assumed,
	// under mu; read by the trigger without it.
	watchedAssumption atomic.Bool
	// idleWatch watches this instance's sharding node, epochWatch the
	// reshard epoch (see Assume); each armed once its first answer came.
	idleWatch, epochWatch func()
	idleArmed, epochArmed bool
	// watchGen counts their events: a read that saw one begin after it
	// started may have missed the change it answers.
	watchGen uint64
	// passed is the latest scheduled fire here, noted as it starts: a
	// reshard after it may owe it the items it gives (see IdleEvent).
	passed time.Time
}

// setAssumedLocked makes a the assumption of the next fire and reports
// whether its proof by watches came or went. c.mu is held.
func (c *Cache) setAssumedLocked(a Assignment) (relead bool) {
	c.assumed = a
	watched := a.Set && a.Watched
	return c.watchedAssumption.Swap(watched) != watched
}

// Assumed returns the assumption a fire under sess may make, if any; its
// items are the caller's.
func (c *Cache) Assumed(sess *regcenter.Session) (Assignment, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.assumed
	if !a.Set || a.Sess != sess {
		return Assignment{}, false
	}
	a.Items = slices.Clone(a.Items)
	return a, true
}

// Forget drops the assumption: the next fire reads the registry.
func (c *Cache) Forget() (relead bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.setAssumedLocked(Assignment{})
}

// WatchedAssumption reports whether the assumption is proved by watches.
// It takes no lock.
func (c *Cache) WatchedAssumption() bool { return c.watchedAssumption.Load() }

// WatchGen is the count of the watches' events: a read that begins by
// taking it passes it to Assume, which stores nothing if an event came
// meanwhile.
func (c *Cache) WatchGen() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.watchGen
}

// Assume stores a, read after WatchGen returned gen, as the next fire's
// assumption — unless an event came meanwhile (the change it answers may
// postdate the read), when it drops the assumption instead. Every
// assumption is watched on the sharding node (armIdle), and, with
// watchEpoch, on the reshard epoch (armEpoch): each arm is called under
// the lock, once, and returns the watch's cancel; an epoch watch no longer
// wanted is handed back in cancels, for the caller to cancel without the
// lock. a is proved by the watches (Watched) once each has answered. After
// Close it stores nothing.
func (c *Cache) Assume(a Assignment, gen uint64, watchEpoch bool, armIdle, armEpoch func() (cancel func())) (cancels []func(), relead bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, false
	}
	if !watchEpoch && c.epochWatch != nil {
		cancels = append(cancels, c.epochWatch)
		c.epochWatch, c.epochArmed = nil, false
	}
	armed := c.idleArmed && (!watchEpoch || c.epochArmed)
	if c.idleWatch == nil {
		c.idleWatch = armIdle()
	}
	if watchEpoch && c.epochWatch == nil {
		c.epochWatch = armEpoch()
	}
	if c.watchGen != gen {
		return cancels, c.setAssumedLocked(Assignment{})
	}
	a.Watched = armed
	return cancels, c.setAssumedLocked(a)
}

// IdleEvent notes an event of the sharding node's watch: the watch is
// armed, the assumption dropped. passed reports a fire noted (NotePass)
// and not yet taken (TakePass): the change may owe it the items it gives.
func (c *Cache) IdleEvent() (relead, passed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.idleArmed = true
	relead = c.setAssumedLocked(Assignment{})
	c.watchGen++
	return relead, !c.passed.IsZero()
}

// EpochEvent notes an event of the reshard epoch's watch: the watch is
// armed, the assumption dropped.
func (c *Cache) EpochEvent() (relead bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epochArmed = true
	relead = c.setAssumedLocked(Assignment{})
	c.watchGen++
	return relead
}

// Held returns the assignment of the latest scheduled fire here, and
// RestoreHeld puts back one returned before: a fire whose proof failed
// reads its assignment again, and what it holds anew must be compared
// with what the previous fire held, not with the assignment it could not
// prove — or an item gained at that fire would count as held since, and
// the gap its previous owner left would not be made up.
func (c *Cache) Held() Assignment {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastHeld
}

// RestoreHeld puts back an assignment Held returned (see Held).
func (c *Cache) RestoreHeld(a Assignment) {
	c.mu.Lock()
	c.lastHeld = a
	c.mu.Unlock()
}

// SwapHeld makes a the assignment of the latest scheduled fire here and
// returns the one before.
func (c *Cache) SwapHeld(a Assignment) (prev Assignment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	prev, c.lastHeld = c.lastHeld, a
	return prev
}

// NotePass notes the fire at as the latest scheduled fire here: it took
// its assignment (assumed, proved or read) before a reshard that may
// follow, and the items that reshard gives it let it pass.
func (c *Cache) NotePass(at time.Time) {
	c.mu.Lock()
	c.passed = at
	c.mu.Unlock()
}

// TakePass returns and clears the fire noted by NotePass, if any.
func (c *Cache) TakePass() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	at := c.passed
	c.passed = time.Time{}
	return at
}

// Close keeps Assume from watching again and returns the cancels of the
// watches it made (nil where none), for the runner's stop.
func (c *Cache) Close() []func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	cancels := []func(){c.idleWatch, c.epochWatch}
	c.idleWatch, c.epochWatch = nil, nil
	return cancels
}

// KeepAssigned removes from held the items the next fire under sess may
// not assume are this instance's (all of them when it may assume nothing:
// the assumption was dropped, or made under another session). It filters
// in place: a one-item completion builds no set of its own.
func (c *Cache) KeepAssigned(sess *regcenter.Session, held map[int]bool) {
	if len(held) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.assumed
	if !a.Set || a.Sess != sess || len(a.Items) == 0 {
		clear(held)
		return
	}
	if len(held) <= 8 {
		for it := range held {
			if !slices.Contains(a.Items, it) {
				delete(held, it)
			}
		}
		return
	}
	mine := make(map[int]bool, len(a.Items))
	for _, it := range a.Items {
		mine[it] = true
	}
	for it := range held {
		if !mine[it] {
			delete(held, it)
		}
	}
}

// ErrMoved means a fire's transaction found that the assignment it
// assumed, or the reshard epoch, changed since they were read.
var ErrMoved = errors.New("assignment or reshard epoch changed")
