package fleet

import (
	"context"
	"sync"
)

// StopAll stops every runner at once, each by stop on a goroutine of its
// own within ctx, waits for them all, and returns the failures as an
// *Errors (nil when every runner stopped cleanly), each under its job's
// name.
func StopAll[R any](ctx context.Context, runners []R, name func(R) string, stop func(context.Context, R) error) error {
	var (
		stopped Errors
		wg      sync.WaitGroup
		mu      sync.Mutex
	)
	for _, r := range runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := stop(ctx, r); err != nil {
				mu.Lock()
				stopped.Add(name(r), err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return stopped.Err()
}
