package registration

import (
	"context"
	"log/slog"
	"slices"
	"sync"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

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

// Arm arms a watch of kind on p through rc, onEvent called for each of
// its events, and keeps its cancel in slot (Keep), also when it could not
// be armed now: it is armed later, and its owner reads what it watches
// then (the error logged at debug level as deferred). ok reports it armed
// now, st what arming read. Nothing is called under the lock.
func (w *Watches) Arm(ctx context.Context, rc regcenter.Center, slot Slot, p string, kind regcenter.WatchKind, onEvent func(), log *slog.Logger, deferred string) (st regcenter.WatchState, ok bool) {
	st, cancel, err := rc.WatchNow(ctx, p, kind, func(regcenter.Event) { onEvent() })
	w.Keep(slot, cancel)
	if err != nil {
		log.Debug(deferred, "err", err)
		return st, false
	}
	return st, true
}

// ArmFlags arms the watch of a server's flags, p its node (slot
// WatchFlags), onEvent called for each of its events. The children it was
// armed with are the server's flags now: when one asks for work (shutdown,
// trigger, backfill) or the status is gone, onEvent is called at once, and
// its owner reads them all; otherwise settled reports that only the pause
// flag is there to note (paused). When the watch could not be armed now,
// neither: the owner reads the flags once it is.
func (w *Watches) ArmFlags(ctx context.Context, rc regcenter.Center, p string, onEvent func(), log *slog.Logger) (paused, settled bool) {
	st, ok := w.Arm(ctx, rc, WatchFlags, p, regcenter.WatchChildren, onEvent, log, "flags watch deferred; it reads the flags once armed")
	if !ok {
		return false, false
	}
	kids := st.Children
	if slices.Contains(kids, layout.Shutdown) || slices.Contains(kids, layout.Trigger) || slices.Contains(kids, layout.BackfillFlag) ||
		!slices.Contains(kids, layout.Status) {
		onEvent()
		return false, false
	}
	return slices.Contains(kids, layout.Paused), true
}

// ArmItems arms the watch of the disabled items' node p (slot WatchItems)
// unless one is kept already, onEvent called for each of its events. It
// reports that the node exists as the watch was armed now: its owner reads
// it. A watch that could not be armed now reads it once armed.
func (w *Watches) ArmItems(ctx context.Context, rc regcenter.Center, p string, onEvent func(), log *slog.Logger) (read bool) {
	if w.Armed(WatchItems) {
		return false
	}
	st, ok := w.Arm(ctx, rc, WatchItems, p, regcenter.WatchNode, onEvent, log, "disabled items watch deferred; it reads them once armed")
	return ok && st.Exists
}
