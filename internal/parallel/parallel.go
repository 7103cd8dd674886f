// Package parallel runs independent calls side by side, bounded.
package parallel

import "sync"

// Each calls fn(0), …, fn(n-1), at most limit of them at a time, and
// returns when every call has returned. With n ≤ 1 or limit ≤ 1 the calls
// run in order on the caller's goroutine.
func Each(n, limit int, fn func(i int)) {
	if n <= 1 || limit <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, limit)
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() { // owned here: waited for below
			defer wg.Done()
			defer func() { <-sem }()
			fn(i)
		}()
	}
	wg.Wait()
}
