package parallel

import (
	"sync/atomic"
	"testing"
)

func TestEachCallsEveryIndexOnceWithinTheLimit(t *testing.T) {
	for _, tc := range []struct{ n, limit int }{{0, 4}, {1, 4}, {10, 1}, {100, 4}, {3, 64}} {
		var calls [100]atomic.Int32
		var in, peak atomic.Int32
		Each(tc.n, tc.limit, func(i int) {
			cur := in.Add(1)
			for {
				p := peak.Load()
				if cur <= p || peak.CompareAndSwap(p, cur) {
					break
				}
			}
			calls[i].Add(1)
			in.Add(-1)
		})
		for i := range tc.n {
			if c := calls[i].Load(); c != 1 {
				t.Fatalf("n=%d limit=%d: index %d called %d times", tc.n, tc.limit, i, c)
			}
		}
		if limit := max(tc.limit, 1); int(peak.Load()) > limit {
			t.Fatalf("n=%d limit=%d: %d calls at once", tc.n, tc.limit, peak.Load())
		}
	}
}
