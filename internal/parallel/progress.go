package parallel

import (
	"context"
	"time"
)

// EachWhileProgress calls fn(ctx', i, progress) for every i in [0, n), at
// most limit at a time, as Each does, under a context ctx' that ends with
// ctx or once idle passes with no progress since the start or the
// previous progress: a call returning nil, or calling progress (a step of
// a call that takes more than one): for waits that may take long in all
// so long as they keep moving, and should stop soon once they stop. It
// returns when every call has returned, each call's error at its index.
func EachWhileProgress(ctx context.Context, n, limit int, idle time.Duration, fn func(ctx context.Context, i int, progress func()) error) []error {
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

func eachWhileProgress(ctx context.Context, n, limit int, idle idleTimer, fn func(ctx context.Context, i int, progress func()) error) []error {
	errs := make([]error, n)
	if n == 0 {
		return errs
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// One progress waiting to be seen is enough: the loop below resets
	// the timer once for all of those sent while it was busy.
	moved := make(chan struct{}, 1)
	progress := func() {
		select {
		case moved <- struct{}{}:
		default:
		}
	}
	done := make(chan struct{})
	go func() { // owned here: waited for below
		defer close(done)
		Each(n, limit, func(i int) {
			if errs[i] = fn(ctx, i, progress); errs[i] == nil {
				progress()
			}
		})
	}()
	for {
		select {
		case <-done:
			return errs
		case <-moved:
			idle.reset()
		case <-idle.c:
			cancel()
			<-done
			return errs
		}
	}
}
