// Package assigned reads this instance's assignment of a job from the
// registry, as a fire's slow path does: the reshard epoch, then the
// server's sharding node, a garbage value answered by asking the leader
// to reshard and reading again; and sends an assumption's proof alone, for
// a fire that marks nothing. Package job decides when to read (a fire
// whose assumption failed, the first fire of a session), waits for a due
// reshard between the two reads, and stores what was read as the next
// fire's assumption (job/internal/assume).
//
// It owns the Reader (reader.go). It keeps no state and no lock, and
// starts nothing. It may import the standard library, regcenter,
// internal/layout and job/internal/assume (the Assignment it fills);
// nothing of package job.
package assigned
