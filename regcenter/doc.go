// Package regcenter is the registry center shardjob stands on: a
// namespaced tree of nodes with ephemeral ownership, atomic multi-node
// transactions, change notifications and a session whose loss is
// signalled ([Center]).
//
// [NewZooKeeper] implements it on Apache ZooKeeper (go-zookeeper/zk). On
// top of the client it adds what the scheduler relies on:
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
//   - Request counters ([ZooKeeper.Stats]) for benchmarks and tests that
//     count round trips.
//
// Package regcenter/zktest starts real ZooKeeper servers and ensembles for
// tests.
package regcenter
