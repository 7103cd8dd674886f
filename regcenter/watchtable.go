package regcenter

import "sync"

// watchTable is a center's registered watches and the queue of work (T)
// for its watch dispatcher: one entry per node and kind, however many
// subscribers share it. Subscribers are called without the table's lock
// held, so they may call back into the center.
type watchTable[T any] struct {
	signal chan struct{} // work was queued

	mu      sync.Mutex
	watches map[watchKey]*watchEntry
	queue   []T
}

type watchKey struct {
	path string
	kind WatchKind
}

type watchSub struct {
	fn func(Event)
}

type watchEntry struct {
	key   watchKey
	subs  map[*watchSub]struct{}
	armed bool // a server-side watch is believed to be set (ZooKeeper)
}

func newWatchTable[T any]() *watchTable[T] {
	return &watchTable[T]{signal: make(chan struct{}, 1), watches: map[watchKey]*watchEntry{}}
}

// enqueue queues t for the dispatcher and wakes it.
func (w *watchTable[T]) enqueue(t T) {
	w.mu.Lock()
	w.queue = append(w.queue, t)
	w.mu.Unlock()
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

// queued receives when work was queued since the last take.
func (w *watchTable[T]) queued() <-chan struct{} { return w.signal }

// take returns the queued work, in order, and empties the queue.
func (w *watchTable[T]) take() []T {
	w.mu.Lock()
	defer w.mu.Unlock()
	batch := w.queue
	w.queue = nil
	return batch
}

// queueLen returns the number of queued tasks.
func (w *watchTable[T]) queueLen() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.queue)
}

// subscribe registers fn for the watch key, creating it unarmed if it is
// new, and returns the watch, the subscription and what removes it (and
// the watch with its last subscriber).
func (w *watchTable[T]) subscribe(key watchKey, fn func(Event)) (*watchEntry, *watchSub, func()) {
	sub := &watchSub{fn: fn}
	w.mu.Lock()
	e := w.watches[key]
	if e == nil {
		e = &watchEntry{key: key, subs: map[*watchSub]struct{}{}}
		w.watches[key] = e
	}
	e.subs[sub] = struct{}{}
	w.mu.Unlock()
	return e, sub, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if e := w.watches[key]; e != nil {
			delete(e.subs, sub)
			if len(e.subs) == 0 {
				delete(w.watches, key)
			}
		}
	}
}

// count returns the number of watches registered.
func (w *watchTable[T]) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.watches)
}

// entry returns the watch k, or nil.
func (w *watchTable[T]) entry(k watchKey) *watchEntry {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.watches[k]
}

// entries returns every watch registered, in no order.
func (w *watchTable[T]) entries() []*watchEntry {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*watchEntry, 0, len(w.watches))
	for _, e := range w.watches {
		out = append(out, e)
	}
	return out
}

func (w *watchTable[T]) isArmed(e *watchEntry) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return e.armed
}

func (w *watchTable[T]) setArmed(e *watchEntry, v bool) {
	w.mu.Lock()
	e.armed = v
	w.mu.Unlock()
}

// deliver calls each of e's subscribers with ev.
func (w *watchTable[T]) deliver(e *watchEntry, ev Event) {
	w.mu.Lock()
	subs := make([]*watchSub, 0, len(e.subs))
	for s := range e.subs {
		subs = append(subs, s)
	}
	w.mu.Unlock()
	for _, s := range subs {
		s.fn(ev)
	}
}

// deliverTo calls s with ev if s still subscribes to e.
func (w *watchTable[T]) deliverTo(s *watchSub, e *watchEntry, ev Event) {
	w.mu.Lock()
	_, live := e.subs[s]
	w.mu.Unlock()
	if live {
		s.fn(ev)
	}
}
