// Package failover holds the failover queue of a job as one instance sees
// it, and what an instance does with it beyond what package failover (the
// queue's own: its entries, their codec, a claim, its release) already
// does: the leader's queueing of a departed server's items while clearing
// its assignment, the scan that claims queued items, and the hand-back of
// a claim on an item running elsewhere. Package job decides when to queue,
// to claim and to hand back (its kickers, the marking stage), reserves the
// items claimed in its book and starts their runs; this package keeps the
// state and reads and writes the nodes, with what the runner hands it
// when it makes a Departures and a Claimer.
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
//   - the leader's queueing (departures.go): Departures.Queue, the items
//     of every departed server of the job, each from the first fire it
//     has not completed (Owed, pure), queued with their assignment
//     cleared;
//   - the claims (claimer.go): Claimer.Read and Claim, a scan of the
//     queue that claims what this instance may run now and returns the
//     Claims by fire, a value for the runs the caller starts; GiveBack,
//     the claims on items that began running here; Claimer.HandBack, the claims
//     on items running elsewhere given back under the session's fence and
//     the items blocked until that run ends; LatestFire; OnGone, the watch
//     for a node's end that re-scans the queue;
//   - the hand-back (handback.go): WaitFor, the node whose end lets this
//     instance claim the item again (the status node of the registered
//     instance whose running mark holds it, or that mark); HandBack, the
//     fenced delete of this instance's claim.
//
// Registry round trips. Departures.Queue reads each departed server's
// assignment and each item's record (the runner's Completed), and queues
// each server's items in one transaction; Claim makes one claim per item
// it may run; Claimer.HandBack costs WaitFor's and HandBack's per item.
// ReadDeparted is one read; QueueDeparted the queue's (package failover's Enqueue: the entries read, one transaction,
// read again if the queue changed meanwhile); WaitFor one or two reads;
// HandBack one transaction.
//
// The lock discipline. The State owns its lock, taken only in its
// methods. WatchGone calls its watch with no lock held, and kick after
// releasing it; the cancel of a watch whose node is gone is called under
// it, so a cancel must not call the State back. Departures and Claimer
// have no lock of their own: a Claimer changes its State only through its
// methods, and calls Watch and Kick with no lock held.
//
// It may import the standard library, regcenter, internal/layout,
// failover (the queue), job/internal/fireplan (the schedule's
// arithmetic) and job/internal/stored (the running mark's codec); nothing
// of package job, nor job/internal/reshard beside it (a departure's
// servers are a plain map). It starts nothing: the watch WatchGone is
// handed calls gone on the caller's goroutines, and OnGone's on the
// goroutines its spawn starts.
package failover
