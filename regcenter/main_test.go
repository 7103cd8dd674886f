package regcenter_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/centertest"
	"github.com/shardjob/shardjob/regcenter/zktest"
)

// zk is the ZooKeeper of this package's tests that need a registry which
// applies transactions (GroupCommit's).
var zk *zktest.Cluster

func TestMain(m *testing.M) { os.Exit(zktest.RunTests(m, &zk)) }

var nsN atomic.Int64

// connect returns a center on zk, in a namespace of its own, closed when
// the test ends.
func connect(t *testing.T) regcenter.Center {
	t.Helper()
	return centertest.ZooKeeperFactory(zk).New(t, fmt.Sprintf("rc%d-%d", os.Getpid(), nsN.Add(1)))
}

// ctx returns a context that ends with the test, or after 20s.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}
