// Package reshard holds the registry protocol of a job's assignment that
// needs no runner: what a reshard reads (the job's servers and their
// nodes, the assignment nodes with their versions), the transaction it
// writes, the request that flags one, the fence of a repair of the load
// table's books, and the leader's reads of whether an assignment still
// holds. Package job decides when a job reshards and who does it (the
// leader, its fence, one reshard at a time), reads the job's config and
// its schedule, and logs and counts; this package only reads and writes
// nodes for it, with the paths and values it is handed.
//
// It owns:
//
//   - the servers (servers.go): Servers, a job's servers and the children
//     of each, which are Online; ReadServers; FakeStatuses, the persistent
//     status nodes no instance holds;
//   - the assignment (assignment.go): Assignment and ReadAssignment, the
//     nodes as read with their versions; Ops, a reshard's part of its
//     transaction (placement.Request.Ops); RepairRequest, a repair of the
//     job's entry in the load table fenced on what it read;
//   - the flags (flags.go): Request, a reshard flagged and asked of the
//     leader; OweMisfires, the debts of the items a reshard left unplaced;
//     ReadDebt, an item's debt as its misfire node says;
//   - the leader's checks (check.go): Stands, whether an assignment holds
//     after servers left; FirstStale and PlacementFault, the reconcile
//     round's reasons to reshard.
//
// Registry round trips. The reads of every server's children, of the
// assignment nodes, of the status nodes and the misfire writes go out
// together, at most 64 at once; the leader's checks read one node at a
// time and stop at the first answer.
//
// It may import the standard library, regcenter, internal/layout,
// internal/parallel, job/internal/placement (the Request it fills, the
// reads of an item list and of the exclusions) and job/internal/stored
// (the misfire node's codec); nothing of package job. It keeps no state
// and starts nothing: parallel.Each's goroutines end before it returns.
package reshard
