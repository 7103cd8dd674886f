package failover

import (
	"slices"
	"sync"

	"github.com/shardjob/shardjob/internal/lazymap"
)

// State is the failover queue as this instance sees it: its claims, the
// items blocked behind a run elsewhere, and the watches whose end
// re-scans the queue. It owns its lock, taken only in this file.
type State struct {
	mu          sync.Mutex
	closed      bool              // the runner stops: no new watch (see Close)
	watches     map[string]func() // claim or running nodes whose end re-scans the queue
	blocked     map[int]bool      // failover items running elsewhere: not claimed until they end
	goneWaiters map[string][]int  // blocked items, by the node whose end unblocks them
	claims      map[int]int32     // failover items claimed here: the queue entry's version
	queueDirty  bool              // the failover queue may hold items
}

// NewState returns the state of an instance that has claimed nothing and
// read nothing of the queue yet.
func NewState() *State {
	return &State{} // its maps are made at their first key (lazymap)
}

// SetDirty marks the queue as possibly holding items for this instance
// (or, false, as just read).
func (c *State) SetDirty(dirty bool) {
	c.mu.Lock()
	c.queueDirty = dirty
	c.mu.Unlock()
}

// Dirty reports whether the queue may hold items for this instance.
func (c *State) Dirty() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queueDirty
}

// IsBlocked reports whether item runs elsewhere: not claimed until it
// ends (see Block).
func (c *State) IsBlocked(item int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.blocked[item]
}

// Block keeps item from being claimed until the node it waits for is gone
// (see WatchGone).
func (c *State) Block(item int) {
	c.mu.Lock()
	lazymap.Set(&c.blocked, item, true)
	c.mu.Unlock()
}

// Unblock lets items be claimed again: they ran here.
func (c *State) Unblock(items []int) {
	c.mu.Lock()
	for _, it := range items {
		delete(c.blocked, it)
	}
	c.mu.Unlock()
}

// Claimed notes this instance's claim on item's queue entry, read at
// version.
func (c *State) Claimed(item int, version int32) {
	c.mu.Lock()
	lazymap.Set(&c.claims, item, version)
	c.mu.Unlock()
}

// ClaimVersion is the version of item's queue entry that this instance's
// claim read, or -1 (any) without a claim.
func (c *State) ClaimVersion(item int) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.claims[item]; ok {
		return v
	}
	return -1
}

// Unclaim drops this instance's claims on items (their runs ended, or the
// claims went back): the entries may still be queued, e.g. moved back to
// an earlier fire meanwhile, so the queue is marked dirty if any was
// claimed.
func (c *State) Unclaim(items []int) {
	c.mu.Lock()
	for _, it := range items {
		if _, ok := c.claims[it]; ok {
			delete(c.claims, it)
			c.queueDirty = true
		}
	}
	c.mu.Unlock()
}

// WatchGone has the queue re-scanned once the node at p is gone, and
// unblocks for claiming the items (item >= 0) that waited for it. It arms
// one watch per node, with watch (which calls gone when the node is
// gone, and returns the watch's cancel), and none once Close has begun.
// When the node is gone, the watch is cancelled and forgotten, the items
// waiting for it are unblocked, the queue is marked dirty, and kick is
// called.
func (c *State) WatchGone(p string, item int, watch func(p string, gone func()) (cancel func()), kick func()) {
	gone := func() {
		c.mu.Lock()
		if w, ok := c.watches[p]; ok {
			delete(c.watches, p)
			w()
		}
		for _, it := range c.goneWaiters[p] {
			delete(c.blocked, it)
		}
		delete(c.goneWaiters, p)
		c.queueDirty = true
		c.mu.Unlock()
		kick()
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	if item >= 0 && !slices.Contains(c.goneWaiters[p], item) {
		lazymap.Set(&c.goneWaiters, p, append(c.goneWaiters[p], item))
	}
	if _, ok := c.watches[p]; ok {
		c.mu.Unlock()
		return
	}
	// Registered before the watch can fire: gone() finds and ends it.
	lazymap.Set(&c.watches, p, func() {})
	c.mu.Unlock()
	cancel := watch(p, gone)
	c.mu.Lock()
	if _, live := c.watches[p]; live && !c.closed {
		lazymap.Set(&c.watches, p, cancel)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	cancel() // already gone (or stopping) before the watch was recorded
}

// Close keeps WatchGone from watching again and returns the cancels of
// the watches it made, for the runner's stop.
func (c *State) Close() []func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	cancels := make([]func(), 0, len(c.watches))
	for _, w := range c.watches {
		cancels = append(cancels, w)
	}
	c.watches = nil
	return cancels
}
