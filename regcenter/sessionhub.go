package regcenter

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"
)

// sessionHub is a center's session state and its listeners: the current
// [Session], whether it is suspended, whether the center is closed, and the
// session events waiting for the listeners. Every center keeps its
// sessions in one, through a [SessionKeeper]; what tells it a session
// started, was suspended or ended differs (ZooKeeper's connection events,
// etcd's keepalives, PostgreSQL's heartbeats), what follows does not.
//
// Session contexts are cancelled synchronously, under the hub's lock;
// listeners hear of each change on notifyLoop's goroutine, in order, so
// they may call back into the center.
type sessionHub struct {
	log   *slog.Logger
	name  string     // the backend, for logs: a Backend... name
	clock LeaseClock // the center's, whose lease every session reports on

	signal  chan struct{} // events are queued
	wakeDog chan struct{} // the watchdog should look again

	mu         sync.Mutex
	session    *Session
	gen        uint64
	suspended  bool
	closed     bool
	listeners  map[int]func(SessionEvent)
	nextID     int
	sessEvents []SessionEvent
}

func newSessionHub(log *slog.Logger, name string, clock LeaseClock) *sessionHub {
	return &sessionHub{
		log:       log,
		name:      name,
		clock:     clock,
		signal:    make(chan struct{}, 1),
		wakeDog:   make(chan struct{}, 1),
		listeners: map[int]func(SessionEvent){},
	}
}

// sessionChange is what [sessionHub.established] did.
type sessionChange int

const (
	sessionKept  sessionChange = iota // the center is closed, or the current session goes on
	sessionFirst                      // the center's first session started
	sessionNext                       // a new session replaced an earlier one
)

// current returns the current session: nil only before the first.
func (h *sessionHub) current() *Session {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.session
}

// closing reports whether close was called.
func (h *sessionHub) closing() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// wakeups receives when the watchdog should look at the session again.
func (h *sessionHub) wakeups() <-chan struct{} { return h.wakeDog }

// wake tells the watchdog to look at the session again.
func (h *sessionHub) wake() {
	select {
	case h.wakeDog <- struct{}{}:
	default:
	}
}

// subscribe registers fn for session events (see Center.OnSession).
func (h *sessionHub) subscribe(fn func(SessionEvent)) (cancel func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	id := h.nextID
	h.nextID++
	h.listeners[id] = fn
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.listeners, id)
	}
}

// established records that the server holds a live session with id (a
// ZooKeeper session id, an etcd lease id): the first session starts; a
// live current session with that id goes on, and is reconnected if it was
// suspended; otherwise a new session starts, and a live current one with
// another id is lost, replaced by it. Nothing changes once the center is
// closed.
func (h *sessionHub) established(id int64) sessionChange {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return sessionKept
	}
	cur := h.session
	switch {
	case cur == nil:
		h.startLocked(id)
		return sessionFirst
	case cur.id == id && cur.ctx.Err() == nil:
		if h.suspended {
			h.suspended = false
			h.log.Info("reconnected", "session", cur.String())
			h.emitLocked(SessionEvent{Type: SessionReconnected, Session: cur})
		}
		return sessionKept
	default:
		if cur.ctx.Err() == nil {
			h.loseLocked(cur, fmt.Errorf("%w: replaced by session 0x%x", ErrSessionLost, id))
		}
		h.startLocked(id)
		return sessionNext
	}
}

// revive starts a new session on s's id when s is still the current
// session and the center is not closed: the server turned out to keep a
// session whose lease had lapsed here. It reports whether it did.
func (h *sessionHub) revive(s *Session) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.session != s {
		return false
	}
	h.startLocked(s.id)
	return true
}

// suspend marks the current session suspended, once, while it is live,
// logging msg with attrs and the lease left.
func (h *sessionHub) suspend(msg string, attrs ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.session
	if h.closed || s == nil || h.suspended || s.ctx.Err() != nil {
		return
	}
	h.suspended = true
	args := append([]any{"session", s.String()}, attrs...)
	args = append(args, "lease_left", h.clock.LeaseLeft().Round(time.Millisecond))
	h.log.Warn(msg, args...)
	h.emitLocked(SessionEvent{Type: SessionSuspended, Session: s})
}

// lose ends the current session with cause, if it is live.
func (h *sessionHub) lose(cause error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.session != nil && h.session.ctx.Err() == nil {
		h.loseLocked(h.session, cause)
	}
}

// lapse ends s if it is the current session, live, and its lease has run
// out: what names the silence ("no word from zookeeper").
func (h *sessionHub) lapse(s *Session, what string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.session == s && s.ctx.Err() == nil && h.clock.LeaseLeft() <= 0 {
		h.loseLocked(s, fmt.Errorf("%w: %s for %v (lease %v)", ErrSessionLost, what, h.clock.SinceRead().Round(time.Millisecond), h.clock.LeaseDuration()))
	}
}

// close marks the center closed and ends the current session with
// [ErrClosed]. It returns that session (nil if there was none) and false
// when the center was closed already.
func (h *sessionHub) close() (*Session, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, false
	}
	h.closed = true
	if h.session != nil {
		h.session.cancel(ErrClosed)
	}
	return h.session, true
}

func (h *sessionHub) startLocked(id int64) {
	h.gen++
	ctx, cancel := context.WithCancelCause(context.Background())
	s := &Session{id: id, gen: h.gen, ctx: ctx, cancel: cancel, clock: h.clock}
	h.session = s
	h.suspended = false
	if h.gen > 1 {
		h.log.Info("new "+h.name+" session", "session", s.String())
		h.emitLocked(SessionEvent{Type: SessionNew, Session: s})
	}
	h.wake()
}

func (h *sessionHub) loseLocked(s *Session, cause error) {
	s.cancel(cause)
	h.log.Warn(h.name+" session lost", "session", s.String(), "cause", cause)
	h.emitLocked(SessionEvent{Type: SessionLost, Session: s})
}

// emitLocked queues ev for the listeners.
func (h *sessionHub) emitLocked(ev SessionEvent) {
	h.sessEvents = append(h.sessEvents, ev)
	select {
	case h.signal <- struct{}{}:
	default:
	}
}

// notifyLoop delivers session events to listeners, in order, until ctx
// ends.
func (h *sessionHub) notifyLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.signal:
		}
		for {
			ev, fns, ok := h.next()
			if !ok {
				break
			}
			for _, fn := range fns {
				fn(ev)
			}
		}
	}
}

// next takes the oldest queued event and the listeners to tell, in the
// order they registered.
func (h *sessionHub) next() (SessionEvent, []func(SessionEvent), bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.sessEvents) == 0 {
		return SessionEvent{}, nil, false
	}
	ev := h.sessEvents[0]
	h.sessEvents = h.sessEvents[1:]
	ids := make([]int, 0, len(h.listeners))
	for id := range h.listeners {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	fns := make([]func(SessionEvent), len(ids))
	for i, id := range ids {
		fns[i] = h.listeners[id]
	}
	return ev, fns, true
}
