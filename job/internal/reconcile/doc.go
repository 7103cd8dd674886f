// Package reconcile holds the scheduler's repair loop: which job's round
// is due when (Loop, Due), what one job's round reads and decides (Round),
// and its leader's check of the stored assignment against the servers
// online (Assignment). Package job runs the Loop on a goroutine of the
// scheduler's, gives it the jobs at each round, and gives each Round what
// it does to its job as funcs: re-registering it, restoring its status,
// campaigning, flagging a reshard, queueing the departed servers' items.
//
// It owns:
//
//   - the Loop (loop.go): a round at once and then at the shortest
//     interval of the jobs (a minute at most), each job's round once its
//     interval passed since its last (Due; a job is first due an interval
//     after it is first seen), the books' review once a default interval,
//     the clock measured once a round when a job needs it;
//   - the Round (round.go): under a live session and a job registered
//     under it and prepared, the reads of its status node, its election
//     host and the marks it holds, and on the leader the Assignment and
//     the books' repair — skipped while nothing they read has changed
//     since they last found it right (Seen);
//   - the Pass (round.go): the reads of every round due at once made
//     together, one GetMany for thousands of nodes and one read of the
//     load table's stat, then each round finished in turn: a pass over
//     J jobs led here costs two requests while nothing changed, not a
//     dozen per job;
//   - what a job's last clean check read (seen.go): the stats of every
//     node the leader's checks read, as they stood before it, which the
//     next pass reads and compares;
//   - the Assignment (assignment.go): for a placed job reshard.
//     PlacementFault, for another the strategy's assignment compared with
//     the stored one (reshard.FirstStale); a fault queues the departed
//     servers' items (failover on) and flags a reshard.
//
// The lock discipline. It keeps no lock: the Loop's state (Due, and a
// Seen per job) is its goroutine's own, and a Round is used once, by one
// pass on that goroutine, with its job's Seen.
//
// It may import the standard library, regcenter, internal/layout,
// job/internal/reshard (the servers read, the checks) and sharding (the
// strategies); nothing of package job. It starts no goroutine: Loop.Run
// runs on its caller's and returns when ctx ends, and a Round and a Pass
// run on their caller's; Round.Reregister is expected to start its own,
// the job's.
package reconcile
