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

// Runner runs a package's tests and returns their exit code: a
// *testing.M, or Checked's answer.
type Runner interface{ Run() int }

// Checked returns m with Check after its tests: the goroutines counted
// before they run are the base, and a leak turns a passing run's code into
// 1. before, if given, runs between the tests and the check (to stop what
// the tests shared, such as a browser). For a TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(leakcheck.Checked(m).Run()) }
//
// or, handed to zktest.RunTests, inside the cluster's life.
func Checked(m Runner, before ...func()) Runner { return checked{m, before} }

type checked struct {
	m      Runner
	before []func()
}

func (c checked) Run() int {
	base := runtime.NumGoroutine()
	code := c.m.Run()
	for _, f := range c.before {
		f()
	}
	if code == 0 {
		code = Check(base)
	}
	return code
}
