package parallel

import (
	"context"
	"time"
)

// EachWhileProgress calls fn(ctx', i) for every i in [0, n), at most limit
// at a time, as Each does, under a context ctx' that ends with ctx or once
// idle passes with none of the calls returning nil since the start or the
// previous one that did: for waits that may take long in all so long as
// they keep ending, and should stop soon once they stop ending. It returns
// when every call has returned, each call's error at its index.
func EachWhileProgress(ctx context.Context, n, limit int, idle time.Duration, fn func(ctx context.Context, i int) error) []error {
	t := time.NewTimer(idle)
	defer t.Stop()
	return eachWhileProgress(ctx, n, limit, idleTimer{t.C, func() { t.Reset(idle) }}, fn)
}

// idleTimer is the timer EachWhileProgress resets at each call that
// returns nil; tests fire their own.
type idleTimer struct {
	c     <-chan time.Time
	reset func()
}

func eachWhileProgress(ctx context.Context, n, limit int, idle idleTimer, fn func(ctx context.Context, i int) error) []error {
	errs := make([]error, n)
	if n == 0 {
		return errs
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ended := make(chan struct{}, n) // one per call that returned nil: never blocks
	done := make(chan struct{})
	go func() { // owned here: waited for below
		defer close(done)
		Each(n, limit, func(i int) {
			if errs[i] = fn(ctx, i); errs[i] == nil {
				ended <- struct{}{}
			}
		})
	}()
	for {
		select {
		case <-done:
			return errs
		case <-ended:
			idle.reset()
		case <-idle.c:
			cancel()
			<-done
			return errs
		}
	}
}
