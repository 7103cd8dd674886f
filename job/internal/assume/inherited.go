package assume

import (
	"sync"
	"time"
)

// Inherited holds, by item, the latest fire an item's previous owner may
// have run unrecorded, noted when a reshard gave this instance the item
// with a gap in its record; the make-up run of the gap takes it
// (ShardingContext.MayHaveRunThrough). Its zero value is ready.
type Inherited struct {
	mu    sync.Mutex
	items map[int]time.Time
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
