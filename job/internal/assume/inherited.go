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

// FailedOf returns the failed attempts noted of items (nil when none),
// and keeps them: a note is for the run of its own fire
// (firing.Fire.FailedBefore), which forgets it as it continues the count
// (Continued). Taken by a run that could not use it — a run of a later
// fire that left the item, or one that absorbed the item's debt from
// that fire — the note was lost, and the fire's run began its count over
// (two chaos runs on etcd saw a failed run's fire run again from attempt
// 1 so).
func (h *Inherited) FailedOf(items []int) map[int]Failed {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.failed) == 0 {
		return nil
	}
	var out map[int]Failed
	for _, it := range items {
		if f, ok := h.failed[it]; ok {
			if out == nil {
				out = map[int]Failed{}
			}
			out[it] = f
		}
	}
	return out
}

// Continued forgets item's note of failed attempts if it is of the fire
// at: the run of that fire has taken the count on.
func (h *Inherited) Continued(item int, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if f, ok := h.failed[item]; ok && f.Fire.Equal(at) {
		delete(h.failed, item)
	}
}
