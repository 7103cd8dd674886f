package assume

import (
	"sync"

	"github.com/shardjob/shardjob/regcenter"
)

// Holds are the items whose running marks this instance keeps under one
// session (a generation of it: a mark of an earlier one is stale). Its
// lock is held across a release's transaction (Release), so that a fire
// that finds an item no longer held creates its mark only after the
// release deleted the old one. Its zero value is ready.
type Holds struct {
	mu    sync.Mutex
	sess  *regcenter.Session
	items map[int]bool
}

// HeldOf returns which of items this instance holds the marks of under
// sess (nil when none), waiting for a release in progress. The items are
// reserved by the caller, so no release takes them meanwhile.
func (h *Holds) HeldOf(sess *regcenter.Session, items []int) map[int]bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sess != sess || len(h.items) == 0 {
		return nil
	}
	var held map[int]bool
	for _, it := range items {
		if h.items[it] {
			if held == nil {
				held = make(map[int]bool, len(items))
			}
			held[it] = true
		}
	}
	return held
}

// HoldsAll reports whether this instance holds the marks of every one of
// items under sess.
func (h *Holds) HoldsAll(sess *regcenter.Session, items []int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sess != sess || len(h.items) < len(items) {
		return false
	}
	for _, it := range items {
		if !h.items[it] {
			return false
		}
	}
	return true
}

// Add notes the marks of items, just created under sess. A new session
// starts the set over: the marks of the one before are its own (gone with
// it, or stale).
func (h *Holds) Add(sess *regcenter.Session, items []int) {
	if len(items) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sess != sess {
		h.sess, h.items = sess, make(map[int]bool, len(items))
	}
	for _, it := range items {
		h.items[it] = true
	}
}

// Drop forgets the marks of items, which the caller deletes (or leaves to
// the session's end).
func (h *Holds) Drop(items []int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, it := range items {
		delete(h.items, it)
	}
}

// Count is how many marks this instance holds under sess.
func (h *Holds) Count(sess *regcenter.Session) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sess != sess {
		return 0
	}
	return len(h.items)
}

// Items returns the items whose marks this instance holds under sess, in
// no order.
func (h *Holds) Items(sess *regcenter.Session) []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sess != sess || len(h.items) == 0 {
		return nil
	}
	items := make([]int, 0, len(h.items))
	for it := range h.items {
		items = append(items, it)
	}
	return items
}

// Release gives up the marks held under sess of the items give says to,
// and calls release with them, under the lock: the caller deletes them
// there, and no fire creates a mark of one of them before it returns.
// When the marks held are of another session than sess (an ended
// generation's, not the caller's to delete), it forgets them all and
// calls release(true, nil); when give gives up none, it does not call
// release.
func (h *Holds) Release(sess *regcenter.Session, give func(item int) bool, release func(stale bool, gone []int)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sess != sess {
		h.sess, h.items = nil, nil
		release(true, nil)
		return
	}
	var gone []int
	for it := range h.items {
		if give(it) {
			gone = append(gone, it)
		}
	}
	if len(gone) == 0 {
		return
	}
	for _, it := range gone {
		delete(h.items, it)
	}
	release(false, gone)
}
