package regcenter

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"testing"
	"time"
)

// fixedLease is a LeaseClock whose lease has left what it says.
type fixedLease struct{ left time.Duration }

func (f fixedLease) LeaseLeft() time.Duration     { return f.left }
func (f fixedLease) SinceRead() time.Duration     { return time.Second - f.left }
func (f fixedLease) LeaseDuration() time.Duration { return time.Second }
func (f fixedLease) Backend() string              { return "test" }

// TestSessionHubTransitions drives the hub through every transition both
// centers use and checks the events each listener hears, in order.
func TestSessionHubTransitions(t *testing.T) {
	h := newSessionHub(slog.New(slog.NewTextHandler(io.Discard, nil)), "test", fixedLease{left: -time.Millisecond})
	type heard struct {
		who int
		typ SessionEventType
		gen uint64
	}
	got := make(chan heard, 64)
	h.subscribe(func(ev SessionEvent) { got <- heard{1, ev.Type, ev.Session.gen} })
	cancel3 := h.subscribe(func(ev SessionEvent) { got <- heard{3, ev.Type, ev.Session.gen} })
	h.subscribe(func(ev SessionEvent) { got <- heard{2, ev.Type, ev.Session.gen} })
	cancel3() // listeners are those registered when an event is delivered

	if c := h.established(7); c != sessionFirst {
		t.Fatalf("first established = %v, want sessionFirst", c)
	}
	s1 := h.current()
	h.suspend("suspended")
	h.suspend("suspended again") // once only
	if c := h.established(7); c != sessionKept {
		t.Fatalf("same id established = %v, want sessionKept", c)
	}
	h.lapse(s1, "no word") // the lease has run out: s1 ends
	if s1.Err() == nil || !errors.Is(s1.Err(), ErrSessionLost) {
		t.Fatalf("after lapse: s1.Err() = %v, want ErrSessionLost", s1.Err())
	}
	if !h.revive(s1) {
		t.Fatal("revive(s1) = false, want a new session on its id")
	}
	s2 := h.current()
	if s2 == s1 || s2.ID() != 7 {
		t.Fatalf("after revive: session %v, want a new one with id 7", s2)
	}
	if h.revive(s1) {
		t.Fatal("revive of a session no longer current = true")
	}
	if c := h.established(9); c != sessionNext {
		t.Fatalf("other id established = %v, want sessionNext", c)
	}
	if !errors.Is(s2.Err(), ErrSessionLost) {
		t.Fatalf("replaced session's Err = %v, want ErrSessionLost", s2.Err())
	}
	h.lose(errors.New("gone"))
	s3 := h.current()
	if _, ok := h.close(); !ok {
		t.Fatal("close = false on an open hub")
	}
	if _, ok := h.close(); ok {
		t.Fatal("second close = true")
	}
	if c := h.established(11); c != sessionKept || h.current() != s3 {
		t.Fatalf("established after close = %v, session %v; want nothing changed", c, h.current())
	}

	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.notifyLoop(ctx) }()
	want := []heard{
		{1, SessionSuspended, 1}, {2, SessionSuspended, 1},
		{1, SessionReconnected, 1}, {2, SessionReconnected, 1},
		{1, SessionLost, 1}, {2, SessionLost, 1},
		{1, SessionNew, 2}, {2, SessionNew, 2},
		{1, SessionLost, 2}, {2, SessionLost, 2},
		{1, SessionNew, 3}, {2, SessionNew, 3},
		{1, SessionLost, 3}, {2, SessionLost, 3},
	}
	var heardAll []heard
	deadline := time.After(10 * time.Second)
	for len(heardAll) < len(want) {
		select {
		case ev := <-got:
			heardAll = append(heardAll, ev)
		case <-deadline:
			t.Fatalf("heard %v within 10 s, want %v", heardAll, want)
		}
	}
	stop()
	<-done
	if !reflect.DeepEqual(heardAll, want) {
		t.Fatalf("heard %v, want %v", heardAll, want)
	}
	select {
	case ev := <-got:
		t.Fatalf("heard %v after the last expected event", ev)
	default:
	}
}
