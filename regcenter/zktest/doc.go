// Package zktest runs real ZooKeeper servers for tests, the way Curator's
// TestingServer and TestingCluster do for Java: a standalone server or an
// ensemble of JVMs on free loopback ports, with helpers to stop, kill and
// restart members so a test can watch a client survive a leader crash or a
// whole-ensemble restart.
//
// # Requirements
//
// A Java runtime and ZooKeeper 3.5 or newer. zktest looks for ZooKeeper in
// $ZOOKEEPER_HOME (an unpacked Apache release, jars in lib/) and then in
// Debian's package (jars in /usr/share/java). On Debian or Ubuntu:
//
//	sudo apt-get install zookeeper
//
// The package's own service need not run; zktest starts its own servers.
// If nothing is found, [StartCluster] returns an error wrapping
// [ErrNotInstalled] that says how to install it, and [Start] fails the test
// with that message.
//
// # Isolation
//
// Every server binds 127.0.0.1 only, on ports picked free at start, and
// keeps its config, data and log in its own directory (a temporary one
// unless [Options.Dir] says otherwise); nothing is written to /etc or /var.
// The admin server is off and all four-letter words are allowed. Each JVM
// runs in its own process group, is reaped by the Cluster, and on Linux is
// killed by the kernel if the test binary dies, so no server outlives the
// test.
//
// # Use in a test
//
//	func TestFailover(t *testing.T) {
//		zk := zktest.Start(t, zktest.WithSize(3)) // closed when the test ends
//		ctx := t.Context()
//		leader, err := zk.Leader(ctx)
//		if err != nil {
//			t.Fatal(err)
//		}
//		if err := zk.Kill(leader); err != nil {
//			t.Fatal(err)
//		}
//		if err := zk.WaitServing(ctx); err != nil {
//			t.Fatal(err)
//		}
//		// ... assert the client noticed and recovered ...
//	}
//
// # One cluster for a whole package
//
// A JVM takes a second or two to start, so a package with many tests can
// share one cluster from TestMain:
//
//	var zkServers []string
//
//	func TestMain(m *testing.M) {
//		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
//		zk, err := zktest.StartCluster(ctx, zktest.Options{Size: 1})
//		cancel()
//		if err != nil {
//			fmt.Fprintln(os.Stderr, err) // says how to install ZooKeeper if missing
//			os.Exit(1)
//		}
//		zkServers = zk.Servers()
//		code := m.Run()
//		zk.Close()
//		os.Exit(code)
//	}
//
// Tests sharing a cluster should each work under their own root node.
//
// # TLS
//
// [WithTLS] (or [WithMutualTLS], which needs a client certificate) gives
// every member a TLS client port next to its plain one, served by
// ZooKeeper's Netty connection factory from PEM key and trust stores
// (ssl.keyStore.type=PEM, as ZooKeeper 3.8 reads them). A throwaway CA, made
// for the cluster in its directory, signs the servers' certificate (valid
// for 127.0.0.1 and localhost) and a client certificate:
//
//	zk := zktest.Start(t, zktest.WithMutualTLS())
//	files, _ := zk.TLS()         // CAFile, CertFile, KeyFile
//	cfg, err := files.Config()   // or a ready *tls.Config
//	// dial zk.SecureServers() with them
//
// Server output goes to server.log in each member's directory (and to
// [Options.Logger] at debug level); a failed start includes the log's last
// lines in its error.
package zktest
