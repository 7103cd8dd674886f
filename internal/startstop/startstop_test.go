package startstop

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

func TestStopCancelsAndWaitsForEveryGoroutine(t *testing.T) {
	g := New(context.Background())
	var ended atomic.Int32
	for range 5 {
		if err := g.Go(func(ctx context.Context) {
			<-ctx.Done()
			if !errors.Is(context.Cause(ctx), ErrStopped) {
				t.Errorf("cause %v, want ErrStopped", context.Cause(ctx))
			}
			ended.Add(1)
		}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if n := ended.Load(); n != 5 {
		t.Fatalf("%d goroutines ended before Stop returned, want 5", n)
	}
	if err := g.Go(func(context.Context) { t.Error("ran after Stop") }); !errors.Is(err, ErrClosed) {
		t.Fatalf("Go after Stop: %v, want ErrClosed", err)
	}
}

func TestParentCancellationDoesNotEndTheGroup(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.Background())
	g := New(parent)
	cancelParent()
	if err := g.Context().Err(); err != nil {
		t.Fatalf("group context ended with its parent: %v", err)
	}
	g.Cancel(nil)
	if !errors.Is(context.Cause(g.Context()), ErrStopped) {
		t.Fatalf("cause %v", context.Cause(g.Context()))
	}
}

func TestWaitReturnsAtTheDeadlineForAGoroutineThatIgnoresItsContext(t *testing.T) {
	g := New(context.Background())
	release := make(chan struct{})
	if err := g.Go(func(context.Context) { <-release }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := g.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop: %v, want DeadlineExceeded", err)
	}
	close(release)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	if err := g.Wait(ctx2); err != nil {
		t.Fatal(err)
	}
}

func TestCloseRefusesNewGoroutinesButLetsRunningOnesEnd(t *testing.T) {
	g := New(context.Background())
	started := make(chan struct{})
	if err := g.Go(func(ctx context.Context) {
		close(started)
		if ctx.Err() != nil {
			t.Error("Close cancelled the context")
		}
	}); err != nil {
		t.Fatal(err)
	}
	<-started
	g.Close()
	if !g.Closed() {
		t.Fatal("not closed")
	}
	if err := g.Go(func(context.Context) {}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Go after Close: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestNewOnRunsThroughSpawnAndHonoursARefusal(t *testing.T) {
	var spawned atomic.Int32
	refuse := atomic.Bool{}
	g := NewOn(context.Background(), func(f func()) bool {
		if refuse.Load() {
			return false
		}
		spawned.Add(1)
		go f()
		return true
	})
	done := make(chan struct{})
	if err := g.Go(func(context.Context) { close(done) }); err != nil {
		t.Fatal(err)
	}
	<-done
	refuse.Store(true)
	if err := g.Go(func(context.Context) { t.Error("ran though refused") }); !errors.Is(err, ErrClosed) {
		t.Fatalf("refused spawn: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.Stop(ctx); err != nil { // a refused start must not be waited for
		t.Fatal(err)
	}
	if spawned.Load() != 1 {
		t.Fatalf("spawned %d", spawned.Load())
	}
}

func ExampleGroup() {
	g := New(context.Background())
	ticks := make(chan int)
	_ = g.Go(func(ctx context.Context) {
		defer close(ticks)
		for i := 1; i <= 3; i++ {
			select {
			case ticks <- i:
			case <-ctx.Done():
				return
			}
		}
	})
	for i := range ticks {
		fmt.Println("tick", i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	fmt.Println(g.Stop(ctx))
	// Output:
	// tick 1
	// tick 2
	// tick 3
	// <nil>
}

// TestCancelBeforeTheContextIsMade: a group cancelled before anything
// asked for its context hands out one cancelled with that cause, the first
// Cancel's; a goroutine started after starts under it.
func TestCancelBeforeTheContextIsMade(t *testing.T) {
	g := New(context.Background())
	first := errors.New("first")
	g.Cancel(first)
	g.Cancel(errors.New("second"))
	ctx := g.Context()
	if ctx.Err() == nil || !errors.Is(context.Cause(ctx), first) {
		t.Fatalf("context after Cancel: err %v cause %v; want cancelled with the first cause", ctx.Err(), context.Cause(ctx))
	}
	got := make(chan error, 1)
	if err := g.Go(func(ctx context.Context) { got <- context.Cause(ctx) }); err != nil {
		t.Fatal(err)
	}
	if err := <-got; !errors.Is(err, first) {
		t.Fatalf("a goroutine's context cause %v; want the first", err)
	}
	if g.Context() != ctx {
		t.Fatal("Context changed between calls")
	}
}

// TestContextMadeByGoIsTheGroups: the context a first Go makes is the one
// Context returns, and Cancel cancels it.
func TestContextMadeByGoIsTheGroups(t *testing.T) {
	g := New(context.WithValue(context.Background(), ctxKey{}, "v"))
	seen := make(chan context.Context, 1)
	if err := g.Go(func(ctx context.Context) { seen <- ctx }); err != nil {
		t.Fatal(err)
	}
	ctx := <-seen
	if ctx != g.Context() {
		t.Fatal("the goroutine's context is not Context's")
	}
	if ctx.Value(ctxKey{}) != "v" {
		t.Fatal("the group's context lost its parent's values")
	}
	g.Cancel(nil)
	if !errors.Is(context.Cause(ctx), ErrStopped) {
		t.Fatalf("cause %v; want ErrStopped", context.Cause(ctx))
	}
}

type ctxKey struct{}
