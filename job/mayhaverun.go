package job

import (
	"sync"
	"time"
)

// What a make-up run may repeat (ShardingContext.MayHaveRunThrough). The
// registry knows only what the item's record lists; an owner that went
// away may have started fires after it, and their marks went with its
// session. So a run that takes over from such an owner is told the fires
// it stands for up to the latest that owner may have started:
//
//   - a failover run: up to the fire due when the leader queued the
//     departed instance's items, or the last fire of a run cut short by
//     shutdown (failover.Entry.MayHaveRun);
//   - a make-up of a gap an instance finds in an item it gained in a
//     reshard (failover off, a crashed owner): up to the fire before the
//     one that found it (inherited, below).
//
// Every other run stands for fires nobody ran: a make-up of fires missed
// here, or handed over at a leave, which flushed its records first.

// inherited holds, by item, the latest fire an item's previous owner may
// have run unrecorded, noted when a reshard gave this instance the item
// with a gap in its record; the make-up run of the gap takes it. It owns
// its lock, taken only in this file.
type inherited struct {
	mu    sync.Mutex
	items map[int]time.Time
}

// note records that item's previous owner may have run fires through at.
func (h *inherited) note(item int, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.items == nil {
		h.items = map[int]time.Time{}
	}
	if at.After(h.items[item]) {
		h.items[item] = at
	}
}

// take returns and forgets what is noted of items (nil when nothing).
func (h *inherited) take(items []int) map[int]time.Time {
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
