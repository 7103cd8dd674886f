package runs

import (
	"context"
	"sync"
)

// Kicker runs fn on a goroutine whenever kicked, never two at once: kicks
// that arrive while fn runs coalesce into one more run. It lets event
// handlers (which must not block) trigger ZooKeeper work without a
// goroutine per job sitting idle. It is a Kickers of one task.
type Kicker struct{ k Kickers }

// NewKicker returns a Kicker that runs fn on a goroutine of spawn's (which
// reports false, without running it, once its owner is closing: a kick is
// then dropped). The goroutine is spawn's owner's and ends when fn returns
// with no kick pending.
func NewKicker(spawn func(func()) bool, fn func()) *Kicker {
	k := &Kicker{}
	k.k.Init(spawn, func(int) { fn() })
	return k
}

// Kick runs fn on a new goroutine, or once more after the run under way
// if there is one. It does not block.
func (k *Kicker) Kick() { k.k.Kick(0) }

// MaxKicks is the most tasks a Kickers holds.
const MaxKicks = 16

// Kickers is a set of tasks, numbered 0 to MaxKicks-1, each run as a
// Kicker runs its function: on a goroutine whenever kicked, never two of
// one task at once, the kicks that arrive while it runs coalesced into
// one more run; different tasks run side by side. The tasks share one
// lock, one spawn and one function, called with the task's number: one
// value for an owner's many tasks (a job's) in place of a Kicker each. Its
// zero value is unusable; Init sets it up, before any Kick.
type Kickers struct {
	mu      sync.Mutex
	running uint16 // the tasks whose run is under way
	again   uint16 // the tasks kicked while they ran
	spawn   func(func()) bool
	run     func(task int)
}

// Init sets k to run run(task) on a goroutine of spawn's for a kick of
// task (spawn reports false, without running it, once its owner is
// closing: the kick is then dropped). The goroutine is spawn's owner's
// and ends when run returns with no kick of its task pending.
func (k *Kickers) Init(spawn func(func()) bool, run func(task int)) {
	k.spawn, k.run = spawn, run
}

// Kick runs task on a new goroutine, or once more after its run under way
// if there is one. It does not block. task is below MaxKicks.
func (k *Kickers) Kick(task int) {
	bit := uint16(1) << task
	k.mu.Lock()
	if k.running&bit != 0 {
		k.again |= bit
		k.mu.Unlock()
		return
	}
	k.running |= bit
	k.mu.Unlock()
	if !k.spawn(func() { k.loop(task, bit) }) {
		k.mu.Lock()
		k.running &^= bit
		k.mu.Unlock()
	}
}

func (k *Kickers) loop(task int, bit uint16) {
	for {
		k.run(task)
		k.mu.Lock()
		if k.again&bit == 0 {
			k.running &^= bit
			k.mu.Unlock()
			return
		}
		k.again &^= bit
		k.mu.Unlock()
	}
}

// waitCtx waits for wg until ctx ends; false if ctx ended first. The
// helper goroutine ends with the wait group: it outlives the call only
// while goroutines that ignore their contexts are still running.
func waitCtx(ctx context.Context, wg *sync.WaitGroup) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}
