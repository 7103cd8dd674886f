package backend

import (
	"sync"

	"github.com/shardjob/shardjob/regcenter"
)

// WatchTable is a center's registered watches and the queue of work (T)
// for its watch dispatcher: one entry per node and kind, however many
// subscribers share it. Subscribers are called without the table's lock
// held, so they may call back into the center.
type WatchTable[T any] struct {
	signal chan struct{} // work was queued

	mu      sync.Mutex
	watches map[WatchKey]*WatchEntry
	queue   []T
}

// WatchKey is what a watch observes: a node (Kind WatchNode) or its
// children (WatchChildren), at Path relative to the namespace.
type WatchKey struct {
	Path string
	Kind regcenter.WatchKind
}

// WatchSub is one subscriber of a watch.
type WatchSub struct {
	fn func(regcenter.Event)
}

// WatchEntry is one watch: its key, its subscribers and whether the
// server holds it. Nearly every watch has one subscriber (a job's node,
// watched by that job): it is kept in sub, and a set is made only for the
// others (more), at the second.
type WatchEntry struct {
	Key   WatchKey
	sub   *WatchSub              // a subscriber; nil only when there is none; guarded by the table
	more  map[*WatchSub]struct{} // the subscribers beside sub; guarded by the table
	armed bool                   // a server-side watch is believed to be set (ZooKeeper); guarded by the table
}

// add subscribes s. The table's lock is held.
func (e *WatchEntry) add(s *WatchSub) {
	if e.sub == nil {
		e.sub = s
		return
	}
	if e.more == nil {
		e.more = map[*WatchSub]struct{}{}
	}
	e.more[s] = struct{}{}
}

// remove unsubscribes s, and reports whether e has no subscriber left.
// The table's lock is held.
func (e *WatchEntry) remove(s *WatchSub) (empty bool) {
	if e.sub == s {
		e.sub = nil
		for o := range e.more { // one of the others takes its place
			e.sub = o
			delete(e.more, o)
			break
		}
	} else {
		delete(e.more, s)
	}
	return e.sub == nil
}

// has reports whether s subscribes to e. The table's lock is held.
func (e *WatchEntry) has(s *WatchSub) bool {
	if e.sub == s {
		return s != nil
	}
	_, ok := e.more[s]
	return ok
}

// NewWatchTable returns an empty table.
func NewWatchTable[T any]() *WatchTable[T] {
	return &WatchTable[T]{signal: make(chan struct{}, 1), watches: map[WatchKey]*WatchEntry{}}
}

// Enqueue queues t for the dispatcher and wakes it.
func (w *WatchTable[T]) Enqueue(t T) {
	w.mu.Lock()
	w.queue = append(w.queue, t)
	w.mu.Unlock()
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

// Queued receives when work was queued since the last take.
func (w *WatchTable[T]) Queued() <-chan struct{} { return w.signal }

// Take returns the queued work, in order, and empties the queue.
func (w *WatchTable[T]) Take() []T {
	w.mu.Lock()
	defer w.mu.Unlock()
	batch := w.queue
	w.queue = nil
	return batch
}

// QueueLen returns the number of queued tasks.
func (w *WatchTable[T]) QueueLen() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.queue)
}

// Subscribe registers fn for the watch key, creating it unarmed if it is
// new, and returns the watch, the subscription and what removes it (and
// the watch with its last subscriber).
func (w *WatchTable[T]) Subscribe(key WatchKey, fn func(regcenter.Event)) (*WatchEntry, *WatchSub, func()) {
	sub := &WatchSub{fn: fn}
	w.mu.Lock()
	e := w.watches[key]
	if e == nil {
		e = &WatchEntry{Key: key}
		w.watches[key] = e
	}
	e.add(sub)
	w.mu.Unlock()
	return e, sub, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		// The watch now registered for the key: e, or, once e lost its
		// last subscriber, a later one, which sub is not in.
		if cur := w.watches[e.Key]; cur != nil && cur.remove(sub) {
			delete(w.watches, e.Key)
		}
	}
}

// Count returns the number of watches registered.
func (w *WatchTable[T]) Count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.watches)
}

// Entry returns the watch k, or nil.
func (w *WatchTable[T]) Entry(k WatchKey) *WatchEntry {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.watches[k]
}

// Entries returns every watch registered, in no order.
func (w *WatchTable[T]) Entries() []*WatchEntry {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*WatchEntry, 0, len(w.watches))
	for _, e := range w.watches {
		out = append(out, e)
	}
	return out
}

// IsArmed reports whether e's server-side watch is believed set.
func (w *WatchTable[T]) IsArmed(e *WatchEntry) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return e.armed
}

// SetArmed records whether e's server-side watch is believed set.
func (w *WatchTable[T]) SetArmed(e *WatchEntry, v bool) {
	w.mu.Lock()
	e.armed = v
	w.mu.Unlock()
}

// Deliver calls each of e's subscribers with ev.
func (w *WatchTable[T]) Deliver(e *WatchEntry, ev regcenter.Event) {
	w.mu.Lock()
	var subs []*WatchSub
	if e.sub != nil {
		subs = make([]*WatchSub, 0, 1+len(e.more))
		subs = append(subs, e.sub)
	}
	for s := range e.more {
		subs = append(subs, s)
	}
	w.mu.Unlock()
	for _, s := range subs {
		s.fn(ev)
	}
}

// DeliverTo calls s with ev if s still subscribes to e.
func (w *WatchTable[T]) DeliverTo(s *WatchSub, e *WatchEntry, ev regcenter.Event) {
	w.mu.Lock()
	live := e.has(s)
	w.mu.Unlock()
	if live {
		s.fn(ev)
	}
}
