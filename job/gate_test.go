package job

import (
	"testing"
	"time"
)

func TestGatesShareOneChannelPerTime(t *testing.T) {
	var g gates
	at := time.Unix(1_800_000_000, 0)
	c := clockOf(func() time.Time { return at.Add(-20 * time.Millisecond) }) // at is 20ms away
	far := g.until(c, at.Add(time.Hour))
	a := g.until(c, at)
	if b := g.until(c, at); b != a {
		t.Fatal("a second wait for the same time got a channel of its own")
	}
	if g.pending() != 2 {
		t.Fatalf("pending = %d, want 2 (one per time)", g.pending())
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
	if g.pending() != 1 {
		t.Fatalf("pending = %d after one gate closed, want 1", g.pending())
	}
	if b := g.until(c, at); b == a {
		t.Fatal("a closed gate was handed out again")
	}
}
