// Package regcenter is the registry center shardjob stands on: a
// namespaced tree of nodes with ephemeral ownership, atomic multi-node
// transactions, change notifications and a session whose loss is
// signalled ([Center]).
//
// This package is the interface and what every implementation shares; it
// links no registry's client. Each implementation is a package of its
// own, linked only by the programs that import it, and registers itself
// with [Open], which picks the one a [Config] names:
//
//   - regcenter/zookeeper, on Apache ZooKeeper (go-zookeeper/zk), for
//     Config.Servers;
//   - regcenter/etcd, on etcd (leases as sessions, transactions with
//     compares, revision-resumed watches), for Config.Etcd and
//     Config.EmbeddedDir;
//   - regcenter/postgres, on PostgreSQL, for a postgres:// Config.URL
//     ([RegisterOpener]).
//
// A program imports the ones it offers, for their side effect if it opens
// registries only through Open:
//
//	import _ "github.com/shardjob/shardjob/regcenter/zookeeper"
//
// and Open says which import is missing when a Config names a registry
// whose package is not linked. Package regcenter/embedded runs an etcd
// member inside the process, the registry with nothing to install.
//
// On top of each client the implementations add, with the parts kept
// here, what the scheduler relies on:
//
//   - A session lease. [Session] says whether this process may still act as
//     the owner of its ephemeral nodes: the lease lapses after two thirds of
//     the negotiated session timeout without word from the server, before
//     the server can expire the session and hand the nodes to someone else.
//     Work bound to a session checks it ([Session.Check]) or watches its
//     context ([Session.Ctx]). [SessionKeeper] keeps the sessions of every
//     implementation alike.
//   - Persistent watches ([Center.Watch]): re-armed after every
//     notification, reconnect and new session, delivered in order on one
//     dispatch goroutine.
//   - Sentinel errors (ErrNoNode, ErrNodeExists, ErrBadVersion,
//     ErrSessionLost, ...) to test with errors.Is, and [MultiError] naming
//     the operation of a transaction that failed.
//   - Request counters ([Center.Stats]) for benchmarks and tests that
//     count round trips.
//   - [GroupCommit], which sends the Multi calls made while one is in
//     flight as one transaction.
//
// Packages regcenter/etcdtest and regcenter/zktest start real etcd members
// (nothing to install) and real ZooKeeper servers and ensembles for tests,
// and regcenter/centertest is the conformance suite every implementation
// passes.
package regcenter
