package parallel

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestEachWhileProgressLastsWhileCallsEnd: calls that end one after
// another keep the wait going however many idle periods they span in all;
// each one that ends resets the idle timer.
func TestEachWhileProgressLastsWhileCallsEnd(t *testing.T) {
	const n = 6
	release := make([]chan struct{}, n)
	for i := range release {
		release[i] = make(chan struct{})
	}
	resets := make(chan struct{}, n)
	timer := idleTimer{c: make(chan time.Time), reset: func() { resets <- struct{}{} }}
	got := make(chan []error, 1)
	go func() {
		got <- eachWhileProgress(context.Background(), n, 2, timer, func(ctx context.Context, i int, _ func()) error {
			select {
			case <-release[i]:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	for i := range n {
		close(release[i])
		select {
		case <-resets:
		case <-time.After(time.Minute):
			t.Fatalf("call %d ended and the idle timer was not reset", i)
		}
	}
	errs := <-got
	for i, err := range errs {
		if err != nil {
			t.Errorf("call %d: %v, want nil", i, err)
		}
	}
}

// TestEachWhileProgressEndsWhenIdle: once the idle timer fires the calls
// still waiting see their context end; the ones that ended keep nil.
func TestEachWhileProgressEndsWhenIdle(t *testing.T) {
	idle := make(chan time.Time)
	timer := idleTimer{c: idle, reset: func() {}}
	first := make(chan struct{})
	got := make(chan []error, 1)
	go func() {
		got <- eachWhileProgress(context.Background(), 3, 3, timer, func(ctx context.Context, i int, _ func()) error {
			if i == 0 {
				close(first)
				return nil
			}
			<-ctx.Done()
			return ctx.Err()
		})
	}()
	<-first
	idle <- time.Time{}
	errs := <-got
	if errs[0] != nil {
		t.Errorf("call 0: %v, want nil", errs[0])
	}
	for _, i := range []int{1, 2} {
		if !errors.Is(errs[i], context.Canceled) {
			t.Errorf("call %d: %v, want context.Canceled", i, errs[i])
		}
	}
}

// TestEachWhileProgressEndsWithItsContext: the caller's deadline bounds
// the wait however the calls progress.
func TestEachWhileProgressEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	errs := EachWhileProgress(ctx, 4, 2, time.Hour, func(ctx context.Context, i int, _ func()) error {
		<-ctx.Done()
		return ctx.Err()
	})
	for i, err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("call %d: %v, want context.Canceled", i, err)
		}
	}
	if errs := EachWhileProgress(context.Background(), 0, 2, time.Hour, nil); len(errs) != 0 {
		t.Errorf("no calls: %v", errs)
	}
}

// TestEachWhileProgressCountsAStepAsProgress: a call that reports a step
// (progress) and goes on waiting resets the idle timer as a call that
// ends does.
func TestEachWhileProgressCountsAStepAsProgress(t *testing.T) {
	resets := make(chan struct{}, 2)
	timer := idleTimer{c: make(chan time.Time), reset: func() { resets <- struct{}{} }}
	step, end := make(chan struct{}), make(chan struct{})
	got := make(chan []error, 1)
	go func() {
		got <- eachWhileProgress(context.Background(), 1, 1, timer, func(ctx context.Context, _ int, progress func()) error {
			<-step
			progress()
			<-end
			return nil
		})
	}()
	close(step)
	select {
	case <-resets:
	case <-time.After(time.Minute):
		t.Fatal("a step of a call did not reset the idle timer")
	}
	close(end)
	if errs := <-got; errs[0] != nil {
		t.Errorf("call 0: %v, want nil", errs[0])
	}
}
