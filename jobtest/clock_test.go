package jobtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/testing/depcheck"
	"github.com/shardjob/shardjob/jobtest"
)

var start = time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)

// called returns a func for AfterFunc and a channel that receives the
// clock's time each time it is called.
func called(c *jobtest.Clock) (func(), chan time.Time) {
	ch := make(chan time.Time, 16)
	return func() { ch <- c.Now() }, ch
}

func receive(t *testing.T, ch <-chan time.Time, want time.Time) {
	t.Helper()
	select {
	case got := <-ch:
		if !got.Equal(want) {
			t.Fatalf("called with the clock at %v, want %v", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("not called (the clock at %v)", want)
	}
}

func none(t *testing.T, ch <-chan time.Time) {
	t.Helper()
	select {
	case got := <-ch:
		t.Fatalf("called with the clock at %v", got)
	default:
	}
}

func TestClockFiresTimersOnlyWhenMovedPastThem(t *testing.T) {
	c := jobtest.NewClock(start)
	f, ch := called(c)
	tm := c.AfterFunc(start.Add(time.Minute), f)
	if c.Timers() != 1 {
		t.Fatalf("Timers() = %d, want 1", c.Timers())
	}
	c.Advance(time.Minute - time.Nanosecond)
	none(t, ch)
	c.Advance(time.Nanosecond)
	receive(t, ch, start.Add(time.Minute))
	if c.Timers() != 0 || tm.Stop() {
		t.Fatal("a fired timer still waits")
	}
	// Reset after firing sets it again; one for a time passed fires at once.
	if tm.Reset(start.Add(2 * time.Minute)) {
		t.Fatal("Reset of a fired timer reported it pending")
	}
	c.Set(start.Add(3 * time.Minute))
	receive(t, ch, start.Add(3*time.Minute))
	tm.Reset(start)
	receive(t, ch, start.Add(3*time.Minute))
	// Moving back fires nothing; Stop takes a timer off the clock.
	tm.Reset(start.Add(4 * time.Minute))
	c.Set(start)
	none(t, ch)
	if !tm.Stop() || c.Timers() != 0 {
		t.Fatal("Stop did not take a waiting timer off the clock")
	}
	c.Advance(time.Hour)
	none(t, ch)
}

func TestWaitForTimersGatesOnTimersSet(t *testing.T) {
	c := jobtest.NewClock(start)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	set := make(chan struct{})
	go func() {
		<-set
		c.AfterFunc(start.Add(time.Second), func() {})
		c.AfterFunc(start.Add(time.Second), func() {})
	}()
	close(set)
	if err := c.WaitForTimers(ctx, 2); err != nil {
		t.Fatalf("WaitForTimers(2) with two timers set: %v", err)
	}
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	if err := c.WaitForTimers(short, 3); err != context.DeadlineExceeded {
		t.Fatalf("WaitForTimers(3) with two timers: %v, want its context's deadline", err)
	}
}

// A test importing jobtest links what the job package does and no more:
// its own tests start an embedded registry, a user's need not.
func TestLinksNoEtcdServer(t *testing.T) {
	depcheck.Forbid(t, ".", "go.etcd.io/etcd/server/v3", "go.etcd.io/bbolt", "go.etcd.io/raft/v3")
}
