// Package confignode holds a job's config node as this instance reads and
// writes it (Node): the node and the local config made to agree at
// registration (Load, or Adopt with the node read in bulk), the node
// written back when the registry lost it (Restore), its watch (Watch), a
// changed node read and decoded (Read), and a reported deletion read back
// before it is believed (Gone). Package job gives the document's
// encoding and decoding as funcs, and decides what a change of config
// does to the job (its schedule, its reshard, its election); this
// package sees only bytes and the decoded value.
//
// It owns:
//
//   - Load: Overwrite writes the local config; otherwise a valid stored
//     config wins, and one that does not decode is logged and the local
//     config stays; Adopt, the same with the node read already (a join
//     of many jobs reads their nodes in bulk), the write left to its
//     caller's transaction;
//   - Restore: the node made again from the local config when it is gone
//     at re-registration;
//   - Read: a changed node's value, a version that does not decode
//     reported once (stored.BadValues) and refused;
//   - Gone: a deletion reported by the watch, believed only when the node
//     is read back absent, the read tried again until it answers.
//
// The lock discipline. Node holds no lock and no state beyond its fields,
// set at construction; BadValues, which it shares with the job's other
// reads, owns its lock, a leaf. The funcs it is handed (Encode, Decode,
// Registered, and Watch's and Gone's) are called under no lock of this
// package.
//
// It may import the standard library, regcenter and job/internal/stored;
// nothing of package job. It starts nothing: Watch's callbacks run on the
// registry's event goroutine and its caller starts what they do, and Gone
// runs on its caller's goroutine until it has an answer or ctx ends.
package confignode
