// Package leader holds what an instance keeps for a job's leader's duties
// beyond the latch (package election) and the reshard's protocol
// (job/internal/reshard): the watches those duties arm, the servers the
// last reshard here placed items on, the generation that changes with
// leadership, and the turn that lets one reshard or repair of the load
// table's books run at a time on this instance. Package job decides when
// the duties start and end (elected, revoked), arms the watches with the
// functions it hands over, reshards and logs; this package only keeps
// their state.
//
// It owns Duties (duties.go): the watches by key (a server's name,
// ServersWatch or RequestWatch), each armed once (ArmOnce, Keep) and
// dropped all at once when leadership ends (DropAll); those of servers
// gone cancelled as the server list is read again (WatchServers); the
// servers of the last reshard (SetSharded); the generation (BumpGen,
// Changed); and the turn (TryAcquire, Acquire, Release).
//
// The lock discipline. Duties owns its lock, taken only in its methods.
// Under it, it calls the functions it is handed: leading (Keep,
// WatchServers), arm (ArmOnce, WatchServers) and the cancels of servers
// gone (WatchServers); none of them may call Duties back. The turn is a
// channel and needs no lock; it is held across a whole reshard or repair,
// registry round trips included, and is never taken under the lock.
//
// Registry round trips: none. It may import the standard library and
// job/internal/reshard (the Servers it reads); nothing of package job. It
// starts nothing.
package leader
