package assume

import (
	"sync"
	"time"
)

// Inherited holds, by item, the latest fire an item's previous owner may
// have run unrecorded, noted when a reshard gave this instance the item
// with a gap in its record; the make-up run of the gap takes it
// (ShardingContext.MayHaveRunThrough), and with it the attempts of the
// gap's first fire that failed there (NoteFailed). Its zero value is
// ready.
type Inherited struct {
	mu     sync.Mutex
	items  map[int]time.Time
	failed map[int]Failed // see NoteFailed
}

// Note records that item's previous owner may have run fires through at.
func (h *Inherited) Note(item int, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.items == nil {
		h.items = map[int]time.Time{}
	}
	if at.After(h.items[item]) {
		h.items[item] = at
	}
}

// Take returns and forgets what is noted of items (nil when nothing).
func (h *Inherited) Take(items []int) map[int]time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.items) == 0 {
		return nil
	}
	var out map[int]time.Time
	for _, it := range items {
		if at, ok := h.items[it]; ok {
			if out == nil {
				out = map[int]time.Time{}
			}
			out[it] = at
			delete(h.items, it)
		}
	}
	return out
}

// Failed is how many attempts of Fire failed on an item's previous owner
// (failover.Entry.Attempts, or its retry node): the run of that fire here
// continues the count.
type Failed struct {
	Fire time.Time
	N    int
}

// NoteFailed records that n attempts of item's fire at failed on its
// previous owner, for the make-up run of the gap that begins there.
func (h *Inherited) NoteFailed(item int, at time.Time, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failed == nil {
		h.failed = map[int]Failed{}
	}
	h.failed[item] = Failed{Fire: at, N: n}
}

// TakeFailed returns and forgets the failed attempts noted of items for
// the fire at (nil when none): the run of that fire continues the count
// (firing.Fire.FailedBefore). A note of another fire stays for the run of
// its own: taken by a run that cannot use it, it was lost, and the fire's
// make-up started the count over (a chaos run saw a failed run's fire run
// again from attempt 1 so).
func (h *Inherited) TakeFailed(items []int, at time.Time) map[int]Failed {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.failed) == 0 {
		return nil
	}
	var out map[int]Failed
	for _, it := range items {
		if f, ok := h.failed[it]; ok && f.Fire.Equal(at) {
			if out == nil {
				out = map[int]Failed{}
			}
			out[it] = f
			delete(h.failed, it)
		}
	}
	return out
}
