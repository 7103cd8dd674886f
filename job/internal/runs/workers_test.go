package runs

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Tasks run one after another reuse one worker; tasks at once get one
// each; reap ends the workers idle since the reap before; close refuses
// new tasks, ends the idle workers and waits for the busy ones.
func TestWorkersReuseReapAndClose(t *testing.T) {
	var w Workers
	idle := func() int {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.idle)
	}
	waitIdle := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for idle() != n {
			if time.Now().After(deadline) {
				t.Fatalf("%d idle workers, want %d", idle(), n)
			}
			time.Sleep(time.Millisecond)
		}
	}

	for range 5 {
		done := make(chan struct{})
		if !w.Do(func() { close(done) }) {
			t.Fatal("do refused a task before close")
		}
		<-done
		waitIdle(1) // the same worker every time
	}

	const n = 20
	var started, release sync.WaitGroup
	started.Add(n)
	release.Add(1)
	for range n {
		w.Do(func() { started.Done(); release.Wait() })
	}
	started.Wait() // every task runs at once: one worker each
	release.Done()
	waitIdle(n)

	w.reap() // idle since before this reap: kept
	if got := idle(); got != n {
		t.Fatalf("the first reap left %d idle workers, want %d", got, n)
	}
	done := make(chan struct{})
	w.Do(func() { close(done) }) // one of them works again
	<-done
	waitIdle(n)
	w.reap() // the others have been idle since before the previous reap
	if got := idle(); got != 1 {
		t.Fatalf("the second reap left %d idle workers, want the one used since", got)
	}

	block := make(chan struct{})
	running := make(chan struct{})
	w.Do(func() { close(running); <-block })
	<-running
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if w.Close(ctx) {
		t.Fatal("close reported every worker ended while one was busy")
	}
	if w.Do(func() { t.Error("a task ran after close") }) {
		t.Fatal("do took a task after close")
	}
	close(block)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	if !w.Close(ctx2) {
		t.Fatal("the busy worker did not end once its task returned")
	}
}
