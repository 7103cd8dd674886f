// Package reshard holds a job's reshards: the registry protocol of its
// assignment (what a reshard reads — the job's servers and their nodes,
// the assignment nodes with their versions —, the transaction it writes,
// the request that flags one, the fence of a repair of the load table's
// books, the leader's reads of whether an assignment still holds), and the
// Resharder that runs them. Package job decides when a job reshards (a
// fire's wait, a request's kicker, the repairs after a leave, a departure
// and each reconcile round) and makes the Resharder with what it needs of
// the runner: the job's config as a reshard reads it (Job), the leader's
// fence and turn, the placer, the queueing of departed servers' items
// (failover's), the counters it moves and a func told of unplaced items,
// from which it gives the event.
//
// It owns:
//
//   - the Resharder (resharder.go): Reshard, the leader's one-transaction
//     reshard (the turn, the processing flag, the servers, the departed
//     queued, the placer's request, the debts of items left unplaced);
//     Await, a fire's wait for a due reshard (the leader reshards, the
//     others ask and watch); AnswerRequest, the leader's answer to a
//     request; Repair and RepairWhileLive, the job's entry in the load
//     table made what its nodes say; FirstMissed, the first fire an
//     unplaced item misses;
//   - the servers (servers.go): Servers, a job's servers and the children
//     of each, which are Online; ReadServers; FakeStatuses, the persistent
//     status nodes no instance holds;
//   - the assignment (assignment.go): Assignment and ReadAssignment, the
//     nodes as read with their versions; Ops, a reshard's part of its
//     transaction (placement.Request.Ops); RepairRequest, a repair of the
//     job's entry in the load table fenced on what it read;
//   - the flags (flags.go): Request, a reshard flagged and asked of the
//     leader; OweMisfires, the debts of the items a reshard left unplaced;
//     ReadDebt, an item's debt as its misfire node says; OweEarliest
//     (debt.go), a debt a job type's hook owes, the earlier fire kept;
//   - the leader's checks (check.go): Stands, whether an assignment holds
//     after servers left; FirstStale and PlacementFault, the reconcile
//     round's reasons to reshard.
//
// The lock discipline. It has no lock. The Resharder holds the leader's
// turn (Turn, a channel) across a whole reshard or repair, registry round
// trips included, and calls QueueDeparted and Unplaced while it holds it:
// neither may take the turn.
//
// Registry round trips. The reads of every server's children and the
// misfire writes go out together, at most 64 at once; the status nodes are
// one read of many nodes (regcenter.Center.GetMany), the assignment nodes
// and the unplaced node another: a reshard over S servers reads S + 3
// times (the list, each server's children, those two), not 3S + 2; the
// leader's checks read one node at a time and stop at the first answer.
//
// It may import the standard library, regcenter, internal/layout,
// internal/parallel, sharding (a named strategy), job/internal/placement
// (the Request it fills, the reads of an item list and of the
// exclusions), job/internal/fireplan (the schedule's arithmetic) and
// job/internal/stored (the misfire node's codec); nothing of package job,
// nor job/internal/leader, which stands above it (its Duties are a Turn
// here). It starts nothing (parallel.Each's goroutines end before it
// returns) and keeps one fact of its own, atomic: whether the load table
// is behind a departure cleared here (Resharder.BooksBehind).
package reshard
