package runs

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestKickers: a task's kicks while it runs coalesce into one more run;
// another task runs beside it; a kick that spawn refuses is dropped and
// leaves the task free to run at the next.
func TestKickers(t *testing.T) {
	var wg sync.WaitGroup
	refuse := atomic.Bool{}
	spawn := func(f func()) bool {
		if refuse.Load() {
			return false
		}
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
		return true
	}
	var runs [2]atomic.Int32
	entered, release := make(chan int, 4), make(chan struct{})
	var k Kickers
	k.Init(spawn, func(task int) {
		runs[task].Add(1)
		entered <- task
		if task == 0 {
			<-release
		}
	})
	k.Kick(0)
	if got := <-entered; got != 0 {
		t.Fatalf("task %d ran; want 0", got)
	}
	k.Kick(0) // while 0 runs: one more run, however many kicks
	k.Kick(0)
	k.Kick(1) // beside it
	if got := <-entered; got != 1 {
		t.Fatalf("task %d ran beside task 0; want 1", got)
	}
	release <- struct{}{}
	if got := <-entered; got != 0 {
		t.Fatalf("task %d ran; want task 0's coalesced run", got)
	}
	release <- struct{}{}
	wg.Wait()
	if runs[0].Load() != 2 || runs[1].Load() != 1 {
		t.Fatalf("runs %d, %d; want 2 (two kicks coalesced into one) and 1", runs[0].Load(), runs[1].Load())
	}
	refuse.Store(true)
	k.Kick(1) // dropped
	refuse.Store(false)
	k.Kick(1)
	<-entered
	wg.Wait()
	if runs[1].Load() != 2 {
		t.Fatalf("task 1 ran %d times; want the kick after a refused one to run it", runs[1].Load())
	}
}
