package book

import (
	"sync"
	"time"

	"github.com/shardjob/shardjob/internal/lazymap"
)

// Ledger is this instance's account of what its items are owed: for each
// item owed a run, the earliest fire it missed here (a make-up run since
// then pays the debt) and the latest; which items' misfire nodes this
// instance wrote (or took over); the latest scheduled fire each item was
// run or owed at here (what a departing instance hands over); and the
// earliest fire skipped while the connection was down. Everything that
// owes, pays or forgets a run goes through the Book's steps; its callers
// read it, and say which misfire nodes exist (SetNode).
//
// It owns its lock, taken only in this file. Its methods may be called
// with the Book's lock held (never the reverse): a reservation that takes
// an item's debt and reserves the item in one step holds the Book's lock
// around both.
type Ledger struct {
	mu          sync.Mutex
	since, last map[int]time.Time
	nodes       map[int]bool
	dispatched  map[int]time.Time
	missed      time.Time
}

// NewLedger returns a ledger that owes nothing.
func NewLedger() *Ledger {
	return &Ledger{} // its maps are made at their first key (lazymap)
}

// owe records that item missed the fire at; first reports whether it
// moved the start of the item's debt (a new debt, or an earlier one).
func (l *Ledger) owe(item int, at time.Time) (first bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if prev, ok := l.since[item]; !ok || at.Before(prev) {
		lazymap.Set(&l.since, item, at)
		first = true
	}
	if at.After(l.last[item]) {
		lazymap.Set(&l.last, item, at)
	}
	return first
}

// Owed returns the earliest fire item is owed since, if any.
func (l *Ledger) Owed(item int) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.since[item]
	return at, ok
}

// LastOwed is the latest fire item is owed (zero if none).
func (l *Ledger) LastOwed(item int) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last[item]
}

// owedFrom moves the start of item's debt to at, keeping its latest fire:
// a run paid the fires before at.
func (l *Ledger) owedFrom(item int, at time.Time) {
	l.mu.Lock()
	lazymap.Set(&l.since, item, at)
	l.mu.Unlock()
}

// forget drops item's debt.
func (l *Ledger) forget(item int) {
	l.mu.Lock()
	l.forgetLocked(item)
	l.mu.Unlock()
}

func (l *Ledger) forgetLocked(item int) {
	delete(l.since, item)
	delete(l.last, item)
}

// forgetAll drops every debt, and the fire missed while disconnected.
func (l *Ledger) forgetAll() {
	l.mu.Lock()
	l.since, l.last = nil, nil
	l.missed = time.Time{}
	l.mu.Unlock()
}

// Debts returns a copy of every item owed a run, with the fire it is owed
// since.
func (l *Ledger) Debts() map[int]time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[int]time.Time, len(l.since))
	for it, at := range l.since {
		out[it] = at
	}
	return out
}

// Owing reports whether any item is owed a run.
func (l *Ledger) Owing() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.since) > 0
}

// Settled reports whether nothing is owed: no item's run, no fire missed
// while disconnected.
func (l *Ledger) Settled() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.since) == 0 && l.missed.IsZero()
}

// dispatch records that item's fire at was run or owed here.
func (l *Ledger) dispatch(item int, at time.Time) {
	l.mu.Lock()
	if at.After(l.dispatched[item]) {
		lazymap.Set(&l.dispatched, item, at)
	}
	l.mu.Unlock()
}

// DispatchedAt is the latest scheduled fire item was run or owed at here.
func (l *Ledger) DispatchedAt(item int) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dispatched[item]
}

// entry is one item's part of the ledger.
type entry struct {
	dispatched, since, last time.Time
	owed                    bool
}

// entry and restore read and put back one item's debt and dispatch (see
// Reservation).
func (l *Ledger) entry(item int) entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	since, owed := l.since[item]
	return entry{dispatched: l.dispatched[item], since: since, last: l.last[item], owed: owed}
}

func (l *Ledger) restore(item int, e entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.dispatched.IsZero() {
		delete(l.dispatched, item)
	} else {
		lazymap.Set(&l.dispatched, item, e.dispatched)
	}
	if !e.owed {
		l.forgetLocked(item)
		return
	}
	lazymap.Set(&l.since, item, e.since)
	if e.last.IsZero() {
		delete(l.last, item)
	} else {
		lazymap.Set(&l.last, item, e.last)
	}
}

// HasNode reports whether this instance wrote (or took over) item's
// misfire node; SetNode records it.
func (l *Ledger) HasNode(item int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nodes[item]
}

// SetNode records whether item's misfire node is this instance's: written
// or taken over (wrote), or gone.
func (l *Ledger) SetNode(item int, wrote bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if wrote {
		lazymap.Set(&l.nodes, item, true)
	} else {
		delete(l.nodes, item)
	}
}

// missWhileDown records that the fire at was skipped while the connection
// was down: the earliest such fire is run once it is back (Book.TakeMissed).
func (l *Ledger) missWhileDown(at time.Time) {
	l.mu.Lock()
	if l.missed.IsZero() || at.Before(l.missed) {
		l.missed = at
	}
	l.mu.Unlock()
}

// MissedWhileDown returns the earliest fire skipped while the connection
// was down (zero if none).
func (l *Ledger) MissedWhileDown() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.missed
}

// takeMissed returns and clears the earliest fire skipped while the
// connection was down.
func (l *Ledger) takeMissed() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	at := l.missed
	l.missed = time.Time{}
	return at
}
