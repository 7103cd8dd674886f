package errhandler_test

import (
	"os"
	"runtime"
	"testing"

	"github.com/shardjob/shardjob/internal/leakcheck"
)

// TestMain fails the package's tests if they leave goroutines behind.
func TestMain(m *testing.M) {
	base := runtime.NumGoroutine()
	code := m.Run()
	if code == 0 {
		code = leakcheck.Check(base)
	}
	os.Exit(code)
}
