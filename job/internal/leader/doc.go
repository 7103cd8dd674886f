// Package leader holds a job's leader's duties beyond the latch (package
// election) and the reshard itself (job/internal/reshard): what an
// instance keeps for them, and the mechanisms that run them. Package job
// decides when the duties start and end (the election's callbacks) and
// gives the events; this package keeps the duties' state and runs them
// with what the runner hands it when it makes an Office (with failover
// on, the queueing of departed servers' items and the repair of the load
// table's books are funcs it is handed).
//
// It owns:
//
//   - Duties (duties.go), the state: the watches by key (a server's name,
//     ServersWatch or RequestWatch), each armed once (ArmOnce, Keep) and
//     dropped all at once when leadership ends (DropAll); those of servers
//     gone cancelled as the server list is read again (WatchServers); the
//     servers of the last reshard (SetSharded); the generation (BumpGen,
//     Changed); and the turn (TryAcquire, Acquire, Release);
//   - the Office (office.go), the mechanisms: what the leader does when
//     elected (Elected: the servers and the reshard requests watched) or
//     revoked (Revoked), the membership check after a change of the
//     servers (CheckMembership, under the turn so that it compares with
//     the reshard in flight once done: a reshard flagged unless the
//     assignment stands — a new leader's first check keeps the assignment
//     it inherits when it holds, Inherit —; it returns the servers read),
//     Membership (that check, and with failover on the departed servers'
//     items queued and the load table repaired), and the flag of a
//     reshard (FlagReshard, also a function of its own: any instance flags
//     one, at registration too, with no Office made).
//
// The lock discipline. Duties owns its lock, taken only in its methods.
// Under it, it calls the functions it is handed: leading (Keep,
// WatchServers), arm (ArmOnce, WatchServers) and the cancels of servers
// gone (WatchServers); none of them may call Duties back. The turn is a
// channel and needs no lock; it is held across a whole reshard or repair,
// registry round trips included, and is never taken under the lock. The
// Office has no lock: its watches call only the runner's kickers, which
// start a pass on a goroutine of the runner and return.
//
// Registry round trips: Duties none. The Office's: Elected's request
// watch armed by its read and the request read (one each);
// CheckMembership's read of the servers (see reshard.ReadServers), of the
// exclusions and reshard.Stands's, or on a new leader's first check
// Inherit's (Fault's reads and reshard.FakeStatuses's one, on the servers
// already read) and a reshard flag when the assignment does not hold (one
// transaction).
//
// It may import the standard library, regcenter, internal/layout,
// job/internal/reshard (the Servers it reads, Stands) and
// job/internal/placement (the exclusions, the reshard flag); nothing of
// package job. It starts no goroutine of its own: Elected's work runs on
// the goroutine the runner's Go starts, and ends with its pass.
package leader
