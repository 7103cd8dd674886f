// Package sharding decides which server runs which sharding items of a job.
//
// A sharded job splits its work into items 0..totalCount-1. Whenever the set
// of servers running the job changes, the leader computes a new assignment
// of items to servers with a [Strategy] and publishes it; each server then
// runs only its own items. Everything in this package is a pure function of
// its arguments: it does not talk to the registry, and it keeps no state apart
// from the strategy registry.
//
// # Placement across jobs
//
// The default, [Balanced] ("BALANCED"), is computed by [Place]: it sees
// the units (items of every job) each server holds across the namespace,
// and gives a job's extra items to the least loaded servers, moving items
// only when that evens the load. [Idlest] ("IDLEST") places items by free
// executor slots. [Caps] gives each server's n-fault-tolerant cap. Seen through
// [Lookup] as plain strategies, both place a job alone.
//
// # ElasticJob's strategies
//
// These reproduce Apache ElasticJob's results exactly for the same ordered
// server list, so a team moving from ElasticJob keeps the same assignments
// by naming them (the framework passes servers sorted ascending):
//
//   - [AvgAllocation] ("AVG_ALLOCATION"): equal blocks in list
//     order, leftover items one each to the first servers.
//   - [Odevity] ("ODEVITY"): AVG_ALLOCATION over the list in ascending order
//     when the Java hashCode of the job name is odd, descending when even.
//   - [RoundRobin] ("ROUND_ROBIN"): AVG_ALLOCATION over the list rotated by
//     abs(hashCode(jobName)) % len(servers), with Java int semantics. For
//     the rare job name whose hash is Integer.MIN_VALUE ElasticJob throws
//     unless the server count is a power of two; this package returns an
//     error wrapping [ErrJobNameHashOverflow] in the same cases.
//
// The job name hash is Java's String.hashCode over the name's UTF-16 code
// units, so names must match the ones used in ElasticJob byte for byte.
// The package also provides [Scope] ("SCOPE"), which gives every server one
// contiguous range of items (totalCount/len(servers) each, the
// remainder on the last); it has no ElasticJob counterpart.
//
// # Registry
//
// Strategies are chosen by name with [Lookup]; the empty name selects
// BALANCED. Applications add their own with [Register], typically
// from an init function, and [Names] lists what is available. Built-in
// names cannot be replaced.
//
// # Writing a strategy
//
// A strategy must be pure and deterministic: its result may depend only on
// the job name, the ordered server list and the item count, never on
// clocks, randomness, the environment or mutable state, and it must not
// modify the server slice. Every server has to be able to rely on the
// leader's decision, and resharding with unchanged inputs must not move
// items. [StrategyFunc] turns a function into a Strategy.
//
// The framework calls strategies through [Assign], which validates the
// inputs and then verifies the result: every item assigned exactly once,
// only to listed servers, every listed server present (with an empty slice
// if it gets nothing) and item lists sorted ascending. A strategy that
// breaks these rules produces an error wrapping [ErrBadAssignment] instead
// of a silently wrong assignment.
package sharding
