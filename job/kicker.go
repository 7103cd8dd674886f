package job

import (
	"context"
	"slices"
	"sync"
)

func sortStrings(s []string) { slices.Sort(s) }
func sortInts(s []int)       { slices.Sort(s) }

func equalStrings(a, b []string) bool { return slices.Equal(a, b) }

// kicker runs fn on a goroutine whenever kicked, never two at once: kicks
// that arrive while fn runs coalesce into one more run. It lets event
// handlers (which must not block) trigger ZooKeeper work without a
// goroutine per job sitting idle.
type kicker struct {
	mu      sync.Mutex
	running bool
	again   bool
	spawn   func(func()) bool
	fn      func()
}

func newKicker(spawn func(func()) bool, fn func()) *kicker {
	return &kicker{spawn: spawn, fn: fn}
}

func (k *kicker) kick() {
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

func (k *kicker) loop() {
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
