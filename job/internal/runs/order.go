package runs

import (
	"slices"
	"sync"
)

// Order makes a job's scheduled fires reserve their items in fire order: a
// fire held up in coordination (a slow registry, a reshard) would otherwise
// find its item taken by the next fire, owe a run, and its make-up run
// would run that next fire again; and a fire that overtook fires still
// waiting would have them find the item run here through it
// (fireplan.RunHere), and run nothing. A mutex alone does not keep that
// order: a fire that comes as the holder lets go can take it before the
// fires that waited. So each scheduled fire takes a turn when the trigger
// dispatches it (Enter, on the trigger's goroutine: in fire order), and
// waits for the turns before it to be over (Await) before it takes the
// reserving lock (Lock); the lock also keeps a catch-up (Hold) apart from
// the fires. The make-up runs of fires missed while down and of debts
// take turns too, after the fires dispatched before them that are due
// (AwaitDue): a fire dispatched ahead of its time and waiting for it
// (Nap) is not one of them. A debt left by a run that ended just before
// the next fire's time is made up then, through the fires due within the
// lead, and is not held until that fire's time, where a starting deadline
// could drop it.
//
// The zero Order is ready. Turn 0 is no turn: a fire called without one
// waits for none, and its Nap and Leave do nothing.
type Order struct {
	mu sync.Mutex // the reserving lock (Lock, Hold)

	turns sync.Mutex // guards the fields below
	last  uint64     // the latest turn given
	// waiting are the turns given and not over, in order.
	waiting []uint64
	// napping are the turns of fires waiting for their time (Nap).
	napping map[uint64]bool
	// moved is closed when a turn is over or starts to nap (nil: nobody
	// waits for that).
	moved chan struct{}
}

// Lock takes the reserving lock: a fire reserves its items under it, and
// calls Unlock once it has.
func (o *Order) Lock() { o.mu.Lock() }

// Unlock lets the next fire reserve.
func (o *Order) Unlock() { o.mu.Unlock() }

// Hold waits for the fire reserving now, if any, to have reserved its
// items, and returns what lets the next fire go.
func (o *Order) Hold() (release func()) {
	o.mu.Lock()
	return o.mu.Unlock
}

// Enter gives a scheduled fire its turn, after every turn given before.
func (o *Order) Enter() uint64 {
	o.turns.Lock()
	defer o.turns.Unlock()
	o.last++
	o.waiting = append(o.waiting, o.last)
	return o.last
}

// Await waits until every turn before turn is over, or stop is closed.
func (o *Order) Await(turn uint64, stop <-chan struct{}) {
	o.wait(turn, false, stop)
}

// AwaitDue is Await for a make-up run: it waits for the turns before turn
// that are due, and passes those napping (waiting for their time).
func (o *Order) AwaitDue(turn uint64, stop <-chan struct{}) {
	o.wait(turn, true, stop)
}

func (o *Order) wait(turn uint64, passNapping bool, stop <-chan struct{}) {
	for {
		o.turns.Lock()
		if o.clearLocked(turn, passNapping) {
			o.turns.Unlock()
			return
		}
		if o.moved == nil {
			o.moved = make(chan struct{})
		}
		moved := o.moved
		o.turns.Unlock()
		select {
		case <-moved:
		case <-stop:
			return
		}
	}
}

// clearLocked reports whether no turn before turn stands in its way.
func (o *Order) clearLocked(turn uint64, passNapping bool) bool {
	for _, t := range o.waiting {
		if turn == 0 || t >= turn {
			return true
		}
		if !passNapping || !o.napping[t] {
			return false
		}
	}
	return true
}

// Nap marks turn's fire as waiting for its time, until wake is called:
// make-up runs pass it (AwaitDue) meanwhile.
func (o *Order) Nap(turn uint64) (wake func()) {
	if turn == 0 {
		return func() {}
	}
	o.turns.Lock()
	if o.napping == nil {
		o.napping = map[uint64]bool{}
	}
	o.napping[turn] = true
	o.movedLocked()
	o.turns.Unlock()
	return func() {
		o.turns.Lock()
		delete(o.napping, turn)
		o.turns.Unlock()
	}
}

// Leave ends turn: the fire has reserved its items, or gave up its turn
// without reserving any. Ending a turn again does nothing.
func (o *Order) Leave(turn uint64) {
	o.turns.Lock()
	defer o.turns.Unlock()
	i := slices.Index(o.waiting, turn)
	if i < 0 {
		return
	}
	o.waiting = slices.Delete(o.waiting, i, i+1)
	delete(o.napping, turn)
	o.movedLocked()
}

// movedLocked wakes the waiters of Await and AwaitDue.
func (o *Order) movedLocked() {
	if o.moved != nil {
		close(o.moved)
		o.moved = nil
	}
}

// Waiting returns the turns given and not over, in order, and whether a
// fire waits for one of them to be over: what a test of the order, or a
// diagnosis of a fire held up, looks at.
func (o *Order) Waiting() (turns []uint64, awaited bool) {
	o.turns.Lock()
	defer o.turns.Unlock()
	return slices.Clone(o.waiting), o.moved != nil
}

// Napping returns how many turns nap (Nap).
func (o *Order) Napping() int {
	o.turns.Lock()
	defer o.turns.Unlock()
	return len(o.napping)
}
