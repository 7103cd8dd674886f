// Package leakcheck fails a test binary whose tests leave goroutines
// running: schedulers, centers and servers must end what they start.
package leakcheck

import (
	"fmt"
	"os"
	"runtime"
	"time"
)

// Check waits up to 15 s for the number of goroutines to fall back to base
// (the count before the tests ran, plus two of slack for the runtime). It
// returns 0, or prints every goroutine's stack to standard error and
// returns 1: a code for os.Exit from TestMain.
func Check(base int) int {
	deadline := time.Now().Add(15 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= base+2 {
			return 0
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			fmt.Fprintf(os.Stderr, "goroutine leak: %d goroutines, %d before the tests\n%s", n, base, buf[:runtime.Stack(buf, true)])
			return 1
		}
		time.Sleep(100 * time.Millisecond)
	}
}
