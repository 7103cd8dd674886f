// Package etcdtest runs real etcd members for tests, as zktest does for
// ZooKeeper: one member inside the test process (go.etcd.io/etcd/server/v3
// embedded), or a cluster whose members each run in a process of their own
// so that a test can kill, pause (SIGSTOP), restart and wipe them.
//
// Nothing needs installing: the members are the etcd server linked into
// the test binary. A member process is the test binary itself, started
// again with the member's spec in its environment; this package's init
// runs the member instead of the tests. Every member binds 127.0.0.1 only,
// on ports picked free at start and kept across restarts, with its data
// and log (member.log) in its own directory; each process is in its own
// process group, is reaped by the Cluster, and on Linux is killed by the
// kernel if the test binary dies.
//
// # Use in a test
//
//	func TestFailover(t *testing.T) {
//		cluster := etcdtest.Start(t, etcdtest.WithSize(3)) // closed when the test ends
//		rc, err := etcd.Open(ctx, regcenter.Config{Etcd: cluster.Endpoints(), Namespace: "t"}) // package regcenter/etcd
//		// ... then cluster.Kill(i), cluster.Pause(i), cluster.StartMember(ctx, i),
//		// cluster.RestartWiped(ctx, i) ...
//	}
//
// A package with many tests can share one cluster from TestMain with
// [RunTests]. [WithTLS], [WithMutualTLS] and [WithAuth] start members that
// need TLS, client certificates, or a user and password.
package etcdtest
