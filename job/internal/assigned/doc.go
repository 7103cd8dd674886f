// Package assigned gets this instance's assignment of a job for a fire.
// The Reader (reader.go) reads it from the registry, as a fire's slow
// path does: the reshard epoch, then the server's sharding node, a
// garbage value answered by asking the leader to reshard and reading
// again; and sends an assumption's proof alone. The Source (source.go)
// is what the runner calls: it reads (Get), waiting for a due reshard
// between the two reads, releases the held marks of items no longer
// listed, and stores what it read as the next fire's assumption
// (job/internal/assume's Cache), armed with the watches that prove it
// without a request — the sharding node's (the idle watch) and the
// reshard epoch's; it proves an assumption alone (Prove), drops it
// (Forget), and moves the epoch for a reshard flag set by hand
// (NoteEpochFlag). Package job decides when to read (a fire whose
// assumption failed, the first fire of a session), fires on what was
// read, and answers the idle watch's events (IdleEvent says whether one
// owes a catch-up run; the run, and the release of marks a reshard
// moved, are the runner's).
//
// It owns the Reader and the Source, and no state: the assumption and
// the watches' state are the Cache's, the held marks the Releaser's. It
// calls the functions the runner hands the Source (Coord, Unmonitored,
// Relead, ArmIdle), never the fire path. It may import the standard
// library, regcenter, internal/layout and job/internal/assume; nothing of
// package job. It starts nothing but the epoch's watch (its event only
// drops the assumption) and, through ArmIdle, the idle watch.
package assigned
