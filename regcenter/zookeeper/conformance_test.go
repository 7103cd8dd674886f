package zookeeper_test

import (
	"testing"

	"github.com/shardjob/shardjob/regcenter/centertest"
	"github.com/shardjob/shardjob/regcenter/zktest"
)

// TestConformance runs the conformance suite every Center must pass against
// ZooKeeper. It starts a server of its own, not the package's shared one:
// the suite restarts it.
func TestConformance(t *testing.T) {
	centertest.Run(t, centertest.ZooKeeperFactory(zktest.Start(t)))
}
