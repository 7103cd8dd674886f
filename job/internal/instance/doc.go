// Package instance holds this process's node in the namespace
// (layout.Instance) and what the scheduler knows through it: what the
// node publishes (its fault tolerance, alarm threshold, load score and
// slots, drain state, health endpoint and the process holding the id),
// the node as this process's claim on its server id, the units the
// instance holds as the load table last said, the alarm it raises when it
// holds more than its threshold, its drain state, and the clock
// difference with the registry that MaxTimeDiff is checked against.
// Package job makes one Node per Scheduler and gives it, as values and
// funcs at New (Config), what it needs of the scheduler: the registry, the
// options, a goroutine spawner, the items running, and what to do when
// the servers that may take units changed or items are unplaced. It
// tells its changes as Change values, which package job raises as Events.
//
// It owns:
//
//   - the Node (node.go): its state, the watches of the load table, the
//     drain list, the offline marks and the instances (Start, Stop), the
//     load score set last (SetScore, LastScore), what it publishes (Info),
//     its place (Status), and the session of a dead earlier process of
//     this id (StaleOwner);
//   - the claim on the server id (publish.go): Publish, which takes the
//     node over only from an earlier life of this process or a dead
//     process of this host (job/internal/process) and refuses a live one
//     elsewhere (InUse); Unpublish at shutdown;
//   - the changes of place (check.go): Check, the alarm's state machine
//     (AlarmStep), the drain state, the unplaced items' retry;
//   - the clock difference (clock.go): MeasureClock, ClockError;
//   - the drain list's writes and read (drain.go), which package job's
//     Drain, Undrain and Draining call.
//
// The lock discipline. The Node owns its lock, taken only in its
// methods, and calls nothing outside this package under it: its callers
// may hold theirs. Publish reads the state under it and writes the
// registry after; Check reads the registry, steps the state under it,
// and then hands over, publishes and tells the changes, with no lock
// held. The clock's measure and the stale owner are atomics.
//
// It may import the standard library, regcenter, internal/layout,
// job/internal/placement (the node's value, the load table read),
// job/internal/process (the holder of an id) and job/internal/runs (the
// Kicker); nothing of package job. The goroutines it starts are the
// kickers' rounds of Check and of the unplaced retry, each on
// Config.Spawn (the scheduler's, which Shutdown waits for), ended when
// the round returns; the watches' callbacks only kick them. Stop cancels
// the watches.
package instance
