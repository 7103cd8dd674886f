package zktest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// RunTests is for a package's TestMain: it starts a cluster, stores it in
// *c, runs the package's tests and closes the cluster, returning the exit
// code. If no ZooKeeper can be started it says why and returns 1.
//
//	var zk *zktest.Cluster
//
//	func TestMain(m *testing.M) { os.Exit(zktest.RunTests(m, &zk)) }
func RunTests(m *testing.M, c **Cluster, opts ...func(*Options)) int {
	var o Options
	for _, opt := range opts {
		opt(&o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cl, err := StartCluster(ctx, o)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "zktest:", err)
		return 1
	}
	*c = cl
	defer cl.Close()
	return m.Run()
}
