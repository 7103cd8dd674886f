package trigger

import (
	"testing"
	"time"
)

// fixedClock reads a fixed time; its timers are the host's, set for the
// time between it and the time asked.
type fixedClock struct{ now time.Time }

func (c fixedClock) Now() time.Time { return c.now }

func (c fixedClock) AfterFunc(at time.Time, f func()) Timer {
	return hostTimer{time.AfterFunc(at.Sub(c.now), f), c.now}
}

type hostTimer struct {
	t   *time.Timer
	now time.Time
}

func (t hostTimer) Stop() bool              { return t.t.Stop() }
func (t hostTimer) Reset(at time.Time) bool { return t.t.Reset(at.Sub(t.now)) }

// TestGatesShareOneChannelPerTime: one channel per time, closed when it
// comes, never handed out again.
func TestGatesShareOneChannelPerTime(t *testing.T) {
	var g Gates
	at := time.Unix(1_800_000_000, 0)
	c := fixedClock{now: at.Add(-20 * time.Millisecond)} // at is 20ms away
	far := g.Until(c, at.Add(time.Hour))
	a := g.Until(c, at)
	if b := g.Until(c, at); b != a {
		t.Fatal("a second wait for the same time got a channel of its own")
	}
	if g.Pending() != 2 {
		t.Fatalf("pending = %d, want 2 (one per time)", g.Pending())
	}
	select {
	case <-a:
	case <-time.After(10 * time.Second):
		t.Fatal("the gate of a time 20ms away did not close within 10s")
	}
	select {
	case <-far:
		t.Fatal("the gate of a time an hour away closed with the other")
	default:
	}
	if g.Pending() != 1 {
		t.Fatalf("pending = %d after one gate closed, want 1", g.Pending())
	}
	if b := g.Until(c, at); b == a {
		t.Fatal("a closed gate was handed out again")
	}
}
