// Package regcenter is the registry center shardjob stands on: a
// namespaced tree of nodes with ephemeral ownership, atomic multi-node
// transactions, change notifications and a session whose loss is
// signalled ([Center]).
//
// [NewZooKeeper] implements it on Apache ZooKeeper (go-zookeeper/zk) and
// [NewEtcd] on etcd (leases as sessions, transactions with compares,
// revision-resumed watches); [Open] picks the one a [Config] names, and
// package regcenter/embedded runs an etcd member inside the process, the
// registry with nothing to install. On top of either client it adds what
// the scheduler relies on:
//
//   - A session lease. [Session] says whether this process may still act as
//     the owner of its ephemeral nodes: the lease lapses after two thirds of
//     the negotiated session timeout without word from the server, before
//     the server can expire the session and hand the nodes to someone else.
//     Work bound to a session checks it ([Session.Check]) or watches its
//     context ([Session.Ctx]).
//   - Persistent watches ([Center.Watch]): re-armed after every
//     notification, reconnect and new session, delivered in order on one
//     dispatch goroutine.
//   - Sentinel errors (ErrNoNode, ErrNodeExists, ErrBadVersion,
//     ErrSessionLost, ...) to test with errors.Is, and [MultiError] naming
//     the operation of a transaction that failed.
//   - Request counters ([ZooKeeper.Stats], [Etcd.Stats]) for benchmarks and tests that
//     count round trips.
//
// Package regcenter/postgres implements it on PostgreSQL; importing it
// lets [Open] reach a postgres:// [Config.URL] ([RegisterOpener]), and
// only the programs that import it link its client.
//
// Packages regcenter/etcdtest and regcenter/zktest start real etcd members
// (nothing to install) and real ZooKeeper servers and ensembles for tests.
package regcenter
