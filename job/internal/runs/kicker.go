package runs

import (
	"context"
	"sync"
)

// Kicker runs fn on a goroutine whenever kicked, never two at once: kicks
// that arrive while fn runs coalesce into one more run. It lets event
// handlers (which must not block) trigger ZooKeeper work without a
// goroutine per job sitting idle.
type Kicker struct {
	mu      sync.Mutex
	running bool
	again   bool
	spawn   func(func()) bool
	fn      func()
}

// NewKicker returns a Kicker that runs fn on a goroutine of spawn's (which
// reports false, without running it, once its owner is closing: a kick is
// then dropped). The goroutine is spawn's owner's and ends when fn returns
// with no kick pending.
func NewKicker(spawn func(func()) bool, fn func()) *Kicker {
	return &Kicker{spawn: spawn, fn: fn}
}

// Kick runs fn on a new goroutine, or once more after the run under way
// if there is one. It does not block.
func (k *Kicker) Kick() {
	k.mu.Lock()
	if k.running {
		k.again = true
		k.mu.Unlock()
		return
	}
	k.running = true
	k.mu.Unlock()
	if !k.spawn(k.loop) {
		k.mu.Lock()
		k.running = false
		k.mu.Unlock()
	}
}

func (k *Kicker) loop() {
	for {
		k.fn()
		k.mu.Lock()
		if !k.again {
			k.running = false
			k.mu.Unlock()
			return
		}
		k.again = false
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
