// Package failover holds the failover queue of a job as one instance sees
// it, and the registry protocol of the queue that needs no runner beyond
// what package failover (the queue's own: its entries, their codec, a
// claim, its release) already does: the leader's read of a departed
// server's assignment and the transaction that queues its items while
// clearing it, and the hand-back of a claim on an item running elsewhere.
// Package job decides what a departed server's items owe, when to claim
// and when to hand a claim back, starts the goroutines and logs; this
// package only keeps the state and reads and writes the nodes it is
// handed the paths and values of.
//
// It owns:
//
//   - the State (state.go): the items claimed here with the version of
//     their queue entry as read (Claimed, ClaimVersion, Unclaim), the
//     items blocked behind a run elsewhere (Block, IsBlocked, Unblock),
//     whether the queue may hold items for this instance (SetDirty,
//     Dirty), and the watches whose end re-scans the queue, each node
//     watched once, none once Close has begun (WatchGone, Close);
//   - a departure (departed.go): Departed and ReadDeparted, a departed
//     server's assignment with its version; QueueDeparted, the queue's
//     entries and the clearing of that assignment at the version read, in
//     one transaction fenced on the leader's latch;
//   - the hand-back (handback.go): WaitFor, the node whose end lets this
//     instance claim the item again (the status node of the registered
//     instance whose running mark holds it, or that mark); HandBack, the
//     fenced delete of this instance's claim.
//
// Registry round trips. ReadDeparted is one read; QueueDeparted the
// queue's (package failover's Enqueue: the entries read, one transaction,
// read again if the queue changed meanwhile); WaitFor one or two reads;
// HandBack one transaction.
//
// The lock discipline. The State owns its lock, taken only in its
// methods. WatchGone calls its watch with no lock held, and kick after
// releasing it; the cancel of a watch whose node is gone is called under
// it, so a cancel must not call the State back.
//
// It may import the standard library, regcenter, internal/layout,
// failover (the queue) and job/internal/stored (the running mark's
// codec); nothing of package job. It starts nothing: the watch WatchGone
// is handed calls gone on the caller's goroutines.
package failover
