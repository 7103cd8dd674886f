package runs

import (
	"testing"
	"time"
)

// TestAMakeUpRunPassesAFireWaitingForItsTime: a make-up run's turn
// (awaitDue) waits for the turns before it that are due, and passes one
// that naps — a fire dispatched ahead of its time, waiting for it — while
// a scheduled fire's turn (await) still waits for it. A buffer-one run
// that ended in the lead before the next fire waited for that fire's
// time, where a starting deadline of one interval dropped it.
func TestAMakeUpRunPassesAFireWaitingForItsTime(t *testing.T) {
	var o Order
	due, napping := o.Enter(), o.Enter()
	wake := o.Nap(napping)
	makeUp, fire := o.Enter(), o.Enter()

	passed := make(chan struct{})
	go func() {
		o.AwaitDue(makeUp, nil)
		close(passed)
	}()
	select {
	case <-passed:
		t.Fatal("the make-up run passed a due fire's turn")
	case <-time.After(50 * time.Millisecond):
	}
	o.Leave(due)
	select {
	case <-passed: // the napping fire's turn does not hold it
	case <-time.After(time.Minute):
		t.Fatal("the make-up run waited for a fire that naps")
	}

	firePassed := make(chan struct{})
	go func() {
		o.Await(fire, nil)
		close(firePassed)
	}()
	o.Leave(makeUp)
	select {
	case <-firePassed:
		t.Fatal("a scheduled fire passed a turn before it that naps")
	case <-time.After(50 * time.Millisecond):
	}
	wake()
	o.Leave(napping)
	select {
	case <-firePassed:
	case <-time.After(time.Minute):
		t.Fatal("the fire waited for a turn that is over")
	}
	if waiting, _ := o.Waiting(); len(waiting) != 1 || o.Napping() != 0 {
		t.Fatalf("turns left: waiting %v, napping %d", waiting, o.Napping())
	}
	o.Leave(fire)
}
