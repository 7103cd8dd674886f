package job

import (
	"time"
)

// fireReservation is what reserveFire took for a scheduled fire: the items
// to run, and how it changed the ledger, so that a fire whose assumed
// assignment turns out wrong (errAssignmentMoved) can put everything back
// before it reads the assignment and fires again.
type fireReservation struct {
	// plain items run this fire only; debts run as make-up runs, grouped
	// by the earliest fire they owe.
	plain []int
	debts map[time.Time][]int
	// taken are the executions this fire put in the book's runs.
	taken []*execution
	// ledger holds each touched item's entries before and after the
	// reservation.
	ledger []ledgerChange

	// one backs the slices above for a fire of one item (most fires): a
	// single allocation for the whole reservation.
	one struct {
		plain  [1]int
		taken  [1]*execution
		ledger [1]ledgerChange
	}
}

// ledgerChange is an item's ledger entry before and after a reservation.
type ledgerChange struct {
	item          int
	before, after ledgerEntry
}

// reserveFire reserves a scheduled fire's items here: those that owe
// nothing earlier are returned as plain, the others grouped by the earliest
// fire they owe (their debts are taken over by the make-up run). Items
// running here owe this fire (and any gap) a run.
//
// Items in ran (their previous owner ran this fire: see ranBefore) that owe
// nothing earlier are not reserved: the fire has run.
func (r *runner) reserveFire(items []int, at time.Time, gaps map[int]time.Time, ran map[int]bool, cfg *spec) *fireReservation {
	res := &fireReservation{}
	if len(items) == 1 {
		res.plain, res.taken, res.ledger = res.one.plain[:0], res.one.taken[:0], res.one.ledger[:0]
	} else {
		res.taken, res.ledger = make([]*execution, 0, len(items)), make([]ledgerChange, 0, len(items))
	}
	r.book.reserveFire(res, items, at, gaps, ran, cfg, r.flags.disabledItems())
	return res
}

// undo puts back what reserveFire took, for a fire that did not go ahead:
// the executions it reserved that are still reserved, and each item's
// ledger where nobody changed it since (a debt noted meanwhile stays).
func (r *runner) undo(res *fireReservation) { r.book.undo(res) }

// reserve claims items locally; items already running here owe a misfire
// since at (through a later fire, when given).
func (r *runner) reserve(items []int, at, through time.Time, kind Kind, cfg *spec) []int {
	var past time.Time
	if kind == KindFailover {
		past = r.pastThrough(cfg, at)
	}
	return r.book.reserve(items, at, through, kind, cfg, r.flags.disabledItems(), past)
}

// release frees items run here, and starts what waited for them: a
// queued trigger, the runs they are owed, the failover queue.
func (r *runner) release(items []int) {
	// A failover run ended (or gave its claim back): its claim goes
	// before the item is free, so that a claim made once it is free is
	// not the one dropped.
	r.fo.unclaim(items)
	_, owed, trig := r.book.release(items)
	dirty := r.fo.dirty()
	if trig {
		r.goFunc(r.fireTriggered)
	}
	switch {
	case owed && dirty:
		// Queued debts first: the instance that runs an item pays the
		// item's failover entry before its own next misfire run, which
		// would otherwise re-mark the item and keep claimers off forever.
		r.goFunc(func() {
			r.claimFailover()
			r.runOwed(r.rc.Session())
		})
	case owed:
		// A fire that found these items busy owes them a run now.
		r.goFunc(func() { r.runOwed(r.rc.Session()) })
	case dirty:
		r.kick.failover.kick()
	}
}

// queueTriggerIfBusy queues a trigger for when the items running here
// are released, if any run, and reports whether it did; release runs it.
func (r *runner) queueTriggerIfBusy() bool { return r.book.queueTriggerIfBusy() }

// isRunning reports whether item is reserved or running here.
func (r *runner) isRunning(item int) bool { return r.book.isRunning(item) }

// runningCount is how many items run here now.
func (r *runner) runningCount() int { return r.book.runningCount() }
