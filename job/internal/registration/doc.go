// Package registration holds a job's registration on this instance: the
// nodes it makes and in which transactions, the order of its steps, the
// watches it keeps, and what a new session redoes. Package job decides
// when a job registers (start, Start's batches, a new session, the
// reconcile loop) and gives, as funcs, what the steps do beyond the
// nodes: its config loaded and restored, the election joined, its book
// and events told; this package writes and reads the registration's nodes,
// runs the steps in order and keeps the watches' cancel functions.
//
// It owns:
//
//   - a new job's tree (tree.go): TreeOps, the operations that make it
//     (the job and config nodes, this server's node and status,
//     leader/sharding with necessary, and the failover queue or the
//     election latch's parent when the job needs them at once), and
//     CreateTrees, many jobs' trees several to a transaction
//     (TreesPerTxn, TreeBytesPerTxn), a job that cannot go in left out
//     having changed nothing (commit, which the joins below share);
//   - jobs that exist already joined several at a time (join.go,
//     JoinMany): their nodes read in bulk (regcenter.Center's GetMany:
//     the config, this server's node, shutdown flag, status and
//     assignment, leader/sharding, the reshard flag, the failover queue),
//     the config adopted (Registrar.Adopt), and several jobs' writes in
//     one transaction, each proving what it relies on (the server node
//     where it is new, the shutdown flag cleared, the status made, a dead
//     earlier life's deleted first at the version read, the assignment
//     checked at its version, the config written with Overwrite, the
//     reshard flag set or checked still set); a job that cannot join so
//     (another session's status to wait for, its config or a part of its
//     tree missing, a node that moved since the read) is left out having
//     changed nothing, for Join; Joined is what its start finishes with;
//   - a job that exists registered node by node (node.go, Node): joining
//     it in one transaction (JoinFresh), the shutdown flag cleared, the
//     server node, the status node and the wait for another session's
//     to go (CreateStatus, failing with Node.InUse), the leader's part
//     of the tree (EnsureTree), and the retries after a new session
//     (Reregister);
//   - a job registered and started in order (registrar.go, Registrar):
//     a new job's tree made, or else the job joined node by node (Start),
//     then its watches armed, the job prepared if it is soon due, and
//     scheduled (Started, or StartJoined for a job JoinMany joined: its
//     debts and the election first, the registration started over node
//     by node when the election lost the registry); the config loaded and
//     the server id joined or the nodes made, tried again (Join); the
//     job's tree, the previous life's debts, the reshard flag and the
//     election after the nodes (Register); the config restored and the
//     job registered again after a new session (Reregister);
//   - what a previous life of this server id left (incarnation.go): its
//     items (PreviousItems, or as JoinMany read them) and the runs they
//     are owed (Owed, and Debts over the schedule's latest fire, returned
//     for package job to note in its book);
//   - a server's leaving of a job (leave.go, Leave): its status and
//     assignment cleared, a reshard flagged and the runs it hands over
//     queued, in one transaction, sent again when a node it read moved;
//   - the watches armed (Arm) and their cancel functions kept
//     (watches.go, Watches), by Slot: the server's flags' watch, with
//     what the flags it was armed with ask (ArmFlags: read them all, or
//     note the pause flag), and the disabled items' watch, armed once
//     (ArmItems);
//   - a registration step tried again after a lost connection or session
//     (retry.go, Retry, LostConnection), within a bound the caller gives.
//
// The lock discipline. Watches owns its lock, taken only in its methods,
// and calls nothing under it (a cancel kept after Close runs after the
// lock is let go, ArmFlags' onEvent after its arming): a leaf, which its callers take under theirs (package
// job arms the disabled items' and the queue's watches under its
// preparation's lock). Node holds no lock and no state beyond its fields,
// set at construction, and so does Registrar; JoinMany keeps what it
// read and planned in its own call. The functions they are handed
// (SessionTimeout, StaleOwner, Registrar's steps, and Owed's completed,
// Reregister's attempt, Retry's step) are called under no lock of this
// package.
//
// It may import the standard library, regcenter, internal/layout,
// package failover (the queue a leave hands runs to), job/internal/marks
// (its transaction that drops ops already as wanted) and
// job/internal/fireplan (a schedule's Next); nothing of package job. It
// starts nothing: CreateStatus's watch is cancelled before it returns,
// and Join, JoinMany, Reregister and Retry run on their caller's
// goroutine (Reregister's is one of the runner's).
package registration
