package failover

import (
	"context"
	"fmt"
	"os"
	"path"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/testing/leakcheck"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

// zk is the ZooKeeper the protocol's tests read and write; the State's
// tests need none.
var zk *zktest.Cluster

func TestMain(m *testing.M) { os.Exit(zktest.RunTests(leakcheck.Checked(m), &zk)) }

var namespaces atomic.Int64

// center opens a session on a namespace of its own, closed when the test
// ends, with a context for its calls.
func center(t *testing.T) (context.Context, *zookeeper.Center) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	ns := fmt.Sprintf("claims%d_%d", os.Getpid(), namespaces.Add(1))
	rc, err := zookeeper.Open(ctx, regcenter.Config{Servers: zk.Servers(), Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rc.Close(); err != nil {
			t.Errorf("closing the session: %v", err)
		}
	})
	return ctx, rc
}

// create makes the node at p with data, and its parents.
func create(ctx context.Context, t *testing.T, rc regcenter.Center, p string, data []byte, mode regcenter.Mode) {
	t.Helper()
	if err := rc.EnsurePath(ctx, path.Dir(p)); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Create(ctx, p, data, mode); err != nil {
		t.Fatalf("creating %s: %v", p, err)
	}
}
