package dispatchhttp_test

import (
	"os"
	"testing"

	"github.com/shardjob/shardjob/internal/testing/leakcheck"
)

func TestMain(m *testing.M) { os.Exit(leakcheck.Checked(m).Run()) }
