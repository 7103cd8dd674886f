package zktest

import "github.com/shardjob/shardjob/internal/testing/testserver"

// RunTests is for a package's TestMain: it starts a cluster, stores it in
// *c, runs the package's tests and closes the cluster, returning the exit
// code. If no ZooKeeper can be started it says why and returns 1. m is the
// package's *testing.M, or anything with its Run method (one that wraps
// it, to check something after the tests while the cluster is still up).
//
//	var zk *zktest.Cluster
//
//	func TestMain(m *testing.M) { os.Exit(zktest.RunTests(m, &zk)) }
func RunTests(m interface{ Run() int }, c **Cluster, opts ...func(*Options)) int {
	return testserver.RunTests(m, c, "zktest", StartCluster, opts)
}
