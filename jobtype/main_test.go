package jobtype_test

import (
	"os"
	"testing"

	"github.com/shardjob/shardjob/internal/testing/leakcheck"
	"github.com/shardjob/shardjob/regcenter/zktest"
)

// zk is the ZooKeeper the job types run under in the scheduler's tests.
var zk *zktest.Cluster

// TestMain starts ZooKeeper for the package's tests and fails them if
// they leave goroutines behind.
func TestMain(m *testing.M) { os.Exit(zktest.RunTests(leakcheck.Checked(m), &zk)) }
