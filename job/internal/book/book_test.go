package book

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestRegistration: the registration's state as the fires and stop read
// it.
func TestRegistration(t *testing.T) {
	b, _ := testBook(&clock{at(10)}, 0)
	sess, other := liveSession(t), liveSession(t)
	if b.RegisteredUnder(sess) {
		t.Fatal("registered before Registered")
	}
	if registered, _ := b.Leaving(); registered {
		t.Fatal("a stop finds the job registered before it was")
	}
	b.Registered(sess)
	if !b.RegisteredUnder(sess) || b.RegisteredUnder(other) {
		t.Fatal("RegisteredUnder does not name the session registered under")
	}
	if s, stopping := b.Session(); s != sess || stopping {
		t.Fatalf("Session = %v, %v", s, stopping)
	}
	if !b.BeginFiring() {
		t.Fatal("a fire refused before stop")
	}
	b.MarkRemoved(true)
	b.BeginStop()
	if b.RegisteredUnder(sess) || !b.Stopping() || b.BeginFiring() {
		t.Fatal("a stopping registration takes fires")
	}
	if registered, removed := b.Leaving(); !registered || !removed {
		t.Fatalf("Leaving = %v, %v; want registered and removed", registered, removed)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if b.WaitFiring(ctx) {
		t.Fatal("the wait for a fire in flight ended before it did")
	}
	b.EndFiring()
	if !b.WaitFiring(context.Background()) {
		t.Fatal("the wait for no fire in flight did not end")
	}
}

// TestIdleWaiters: a fire claiming ahead of its time and stop's wait hear
// when the items running here are released.
func TestIdleWaiters(t *testing.T) {
	b, _ := testBook(&clock{at(10)}, 0)
	j := secondly(2)
	if steady, _ := b.SteadyOrIdle(); !steady {
		t.Fatal("a book with nothing running or owed is not steady")
	}
	b.NoteSuspendedMiss(at(8))
	steady, idle := b.SteadyOrIdle()
	if steady || idle == nil {
		t.Fatal("a fire missed while down leaves the book steady")
	}
	if got := b.TakeMissed(); !got.Equal(at(8)) {
		t.Fatalf("took %v, want 8", got)
	}
	b.ReserveFire(j, []int{0, 1}, at(10), nil, nil, nil)
	_, idle = b.SteadyOrIdle()
	var wg sync.WaitGroup
	wg.Add(1)
	waited := false
	go func() {
		defer wg.Done()
		waited = b.WaitIdle(context.Background())
	}()
	b.Release([]int{0})
	select {
	case <-idle:
		t.Fatal("idle with an item still running")
	default:
	}
	b.Release([]int{1})
	<-idle
	wg.Wait()
	if !waited {
		t.Fatal("WaitIdle did not see the items released")
	}
}
