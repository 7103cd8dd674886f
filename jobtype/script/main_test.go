package script_test

import (
	"os"
	"testing"

	"github.com/shardjob/shardjob/internal/testing/leakcheck"
)

// TestMain fails the package's tests if they leave goroutines behind.
func TestMain(m *testing.M) { os.Exit(leakcheck.Checked(m).Run()) }
