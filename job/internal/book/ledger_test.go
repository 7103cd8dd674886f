package book

import (
	"testing"
	"time"
)

// TestLedgerOwes: a debt starts at the earliest fire missed and ends at
// the latest; moving its start keeps its end; forgetting drops both.
func TestLedgerOwes(t *testing.T) {
	l := NewLedger()
	t0 := time.Unix(1000, 0)
	t1, t2 := t0.Add(time.Second), t0.Add(2*time.Second)
	if !l.owe(3, t1) {
		t.Fatal("a new debt is not reported first")
	}
	if l.owe(3, t2) {
		t.Error("a later fire moved the start of the debt")
	}
	if !l.owe(3, t0) {
		t.Error("an earlier fire did not move the start of the debt")
	}
	if since, ok := l.Owed(3); !ok || !since.Equal(t0) {
		t.Errorf("owed since %v (%v), want %v", since, ok, t0)
	}
	if last := l.LastOwed(3); !last.Equal(t2) {
		t.Errorf("last owed %v, want %v", last, t2)
	}
	l.owedFrom(3, t1)
	if since, _ := l.Owed(3); !since.Equal(t1) || !l.LastOwed(3).Equal(t2) {
		t.Errorf("after owedFrom: since %v last %v, want %v and %v", since, l.LastOwed(3), t1, t2)
	}
	l.forget(3)
	if _, ok := l.Owed(3); ok || !l.LastOwed(3).IsZero() {
		t.Error("a forgotten debt is still owed")
	}
	if !l.Settled() {
		t.Error("a ledger with no debt is not settled")
	}
}

// TestLedgerDebtsIsACopy: the debts handed out do not change with the
// ledger, so a caller may forget debts while it walks them.
func TestLedgerDebtsIsACopy(t *testing.T) {
	l := NewLedger()
	at := time.Unix(2000, 0)
	l.owe(1, at)
	l.owe(2, at)
	d := l.Debts()
	for it := range d {
		l.forget(it)
	}
	if len(d) != 2 {
		t.Errorf("debts changed under its caller: %v", d)
	}
	if len(l.Debts()) != 0 {
		t.Errorf("debts left after forgetting them all: %v", l.Debts())
	}
}

// TestLedgerRestore: an entry read and put back leaves the item's debt and
// dispatch as they were, including their absence.
func TestLedgerRestore(t *testing.T) {
	l := NewLedger()
	t0 := time.Unix(3000, 0)
	l.owe(0, t0)
	l.owe(0, t0.Add(time.Second))
	l.dispatch(0, t0)
	saved, empty := l.entry(0), l.entry(1)
	l.forget(0)
	l.dispatch(0, t0.Add(time.Hour))
	l.owe(1, t0)
	l.dispatch(1, t0)
	l.restore(0, saved)
	l.restore(1, empty)
	if got := l.entry(0); got != saved {
		t.Errorf("item 0 restored as %+v, want %+v", got, saved)
	}
	if got := l.entry(1); got != empty {
		t.Errorf("item 1 restored as %+v, want it empty", got)
	}
	if !l.DispatchedAt(1).IsZero() {
		t.Error("item 1 keeps a dispatch it did not have")
	}
}

// TestLedgerMissedWhileDown: the earliest fire skipped while the
// connection was down is kept, taken once, and makes the ledger unsettled.
func TestLedgerMissedWhileDown(t *testing.T) {
	l := NewLedger()
	t0 := time.Unix(4000, 0)
	l.missWhileDown(t0.Add(time.Second))
	l.missWhileDown(t0)
	l.missWhileDown(t0.Add(2 * time.Second))
	if l.Settled() {
		t.Error("a ledger with a missed fire is settled")
	}
	if got := l.MissedWhileDown(); !got.Equal(t0) {
		t.Errorf("missed %v, want the earliest, %v", got, t0)
	}
	if got := l.takeMissed(); !got.Equal(t0) {
		t.Errorf("took %v, want %v", got, t0)
	}
	if got := l.takeMissed(); !got.IsZero() {
		t.Errorf("took %v a second time", got)
	}
	l.missWhileDown(t0)
	l.owe(5, t0)
	l.forgetAll()
	if !l.Settled() {
		t.Error("forgetAll left a debt or a missed fire")
	}
}

// TestLedgerNodes: which misfire nodes this instance wrote.
func TestLedgerNodes(t *testing.T) {
	l := NewLedger()
	l.SetNode(7, true)
	if !l.HasNode(7) || l.HasNode(8) {
		t.Fatal("HasNode does not say which nodes were written")
	}
	l.SetNode(7, false)
	if l.HasNode(7) {
		t.Error("a dropped node is still recorded")
	}
}
