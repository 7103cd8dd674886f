package registration

import "sync"

// Slot names one of the registration's watches kept in Watches.
type Slot int

// The registration's watches.
const (
	WatchConfig Slot = iota // the config node
	WatchFlags              // this server's flags
	WatchItems              // the disabled items
	WatchQueue              // the failover queue
	slots
)

// Watches keep the cancel functions of the registration's watches, for
// stop. It owns its lock, taken only in its methods; it calls nothing
// under it. The zero value is ready.
type Watches struct {
	mu      sync.Mutex
	closed  bool // stop collected them (see Close)
	cancels [slots]func()
}

// Armed reports whether a watch is kept in slot.
func (w *Watches) Armed(slot Slot) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cancels[slot] != nil
}

// Keep stores a watch's cancel function in slot, or cancels it at once
// if Close has collected them already.
func (w *Watches) Keep(slot Slot, cancel func()) {
	w.mu.Lock()
	closed := w.closed
	if !closed {
		w.cancels[slot] = cancel
	}
	w.mu.Unlock()
	if closed {
		cancel()
	}
}

// Close returns the watches' cancel functions (config, queue, flags,
// items: nil for those not kept), for stop; a watch kept after it is
// cancelled at once.
func (w *Watches) Close() []func() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	c := w.cancels
	w.cancels = [slots]func(){}
	return []func(){c[WatchConfig], c[WatchQueue], c[WatchFlags], c[WatchItems]}
}
