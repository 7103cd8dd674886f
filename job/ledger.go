package job

import (
	"sync"
	"time"
)

// ledger is this instance's account of what its items are owed: for each
// item owed a run, the earliest fire it missed here (a make-up run since
// then pays the debt) and the latest; which items' misfire nodes this
// instance wrote (or took over); the latest scheduled fire each item was
// run or owed at here (what a departing instance hands over); and the
// earliest fire skipped while the connection was down. Everything that
// owes, pays or forgets a run goes through its methods.
//
// It owns its lock, taken only in this file. Its methods may be called
// with the book's lock held (never the reverse): a reservation that
// takes an item's debt and reserves the item in one step holds the book's lock
// around both.
type ledger struct {
	mu          sync.Mutex
	since, last map[int]time.Time
	nodes       map[int]bool
	dispatched  map[int]time.Time
	missed      time.Time
}

func newLedger() *ledger {
	return &ledger{since: map[int]time.Time{}, last: map[int]time.Time{}, nodes: map[int]bool{}, dispatched: map[int]time.Time{}}
}

// owe records that item missed the fire at; first reports whether it
// moved the start of the item's debt (a new debt, or an earlier one).
func (l *ledger) owe(item int, at time.Time) (first bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if prev, ok := l.since[item]; !ok || at.Before(prev) {
		l.since[item] = at
		first = true
	}
	if at.After(l.last[item]) {
		l.last[item] = at
	}
	return first
}

// owed returns the earliest fire item is owed since, if any.
func (l *ledger) owed(item int) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.since[item]
	return at, ok
}

// lastOwed is the latest fire item is owed (zero if none).
func (l *ledger) lastOwed(item int) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last[item]
}

// owedFrom moves the start of item's debt to at, keeping its latest fire:
// a run paid the fires before at.
func (l *ledger) owedFrom(item int, at time.Time) {
	l.mu.Lock()
	l.since[item] = at
	l.mu.Unlock()
}

// forget drops item's debt.
func (l *ledger) forget(item int) {
	l.mu.Lock()
	l.forgetLocked(item)
	l.mu.Unlock()
}

func (l *ledger) forgetLocked(item int) {
	delete(l.since, item)
	delete(l.last, item)
}

// forgetAll drops every debt, and the fire missed while disconnected.
func (l *ledger) forgetAll() {
	l.mu.Lock()
	l.since, l.last = map[int]time.Time{}, map[int]time.Time{}
	l.missed = time.Time{}
	l.mu.Unlock()
}

// debts returns a copy of every item owed a run, with the fire it is owed
// since.
func (l *ledger) debts() map[int]time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[int]time.Time, len(l.since))
	for it, at := range l.since {
		out[it] = at
	}
	return out
}

// settled reports whether nothing is owed: no item's run, no fire missed
// while disconnected.
func (l *ledger) settled() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.since) == 0 && l.missed.IsZero()
}

// dispatch records that item's fire at was run or owed here.
func (l *ledger) dispatch(item int, at time.Time) {
	l.mu.Lock()
	if at.After(l.dispatched[item]) {
		l.dispatched[item] = at
	}
	l.mu.Unlock()
}

// dispatchedAt is the latest scheduled fire item was run or owed at here.
func (l *ledger) dispatchedAt(item int) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dispatched[item]
}

// ledgerEntry is one item's part of the misfire ledger.
type ledgerEntry struct {
	dispatched, since, last time.Time
	owed                    bool
}

// entry and restore read and put back one item's debt and dispatch (see
// fireReservation).
func (l *ledger) entry(item int) ledgerEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	since, owed := l.since[item]
	return ledgerEntry{dispatched: l.dispatched[item], since: since, last: l.last[item], owed: owed}
}

func (l *ledger) restore(item int, e ledgerEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.dispatched.IsZero() {
		delete(l.dispatched, item)
	} else {
		l.dispatched[item] = e.dispatched
	}
	if !e.owed {
		l.forgetLocked(item)
		return
	}
	l.since[item] = e.since
	if e.last.IsZero() {
		delete(l.last, item)
	} else {
		l.last[item] = e.last
	}
}

// hasNode reports whether this instance wrote (or took over) item's
// misfire node; setNode records it.
func (l *ledger) hasNode(item int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nodes[item]
}

func (l *ledger) setNode(item int, wrote bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if wrote {
		l.nodes[item] = true
	} else {
		delete(l.nodes, item)
	}
}

// missWhileDown records that the fire at was skipped while the connection
// was down: the earliest such fire is run once it is back (fireMissedWhileDown).
func (l *ledger) missWhileDown(at time.Time) {
	l.mu.Lock()
	if l.missed.IsZero() || at.Before(l.missed) {
		l.missed = at
	}
	l.mu.Unlock()
}

// missedWhileDown returns the earliest fire skipped while the connection
// was down (zero if none).
func (l *ledger) missedWhileDown() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.missed
}

// takeMissed returns and clears the earliest fire skipped while the
// connection was down.
func (l *ledger) takeMissed() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	at := l.missed
	l.missed = time.Time{}
	return at
}
