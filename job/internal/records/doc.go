// Package records holds what this instance knows of the completed records
// of a job's items (Cache): each record as last read or written here, with
// the node's version, whether the node exists, when each was last written
// here, and the records deferred here (written behind, or journalled) and
// not written yet; and the reading of a record from the registry
// (Reader). Package job and job/internal/completion write the nodes and
// tell the Cache what they read or wrote; a marking transaction proves an
// item's record by the version the Cache knows, and a completion writes
// over it.
//
// It owns:
//
//   - Record (record.go): an item's completed node as known here — what it
//     says ran (a fireplan.Cover), its version, the failed runs it lists,
//     and whether it was read with another process's journal added;
//   - the Cache (cache.go): the records, the deferred ones (Pending) and
//     what a completion transaction's size per item was (ItemsPerTxn);
//   - the Reader (read.go): an item's completed node read, with what
//     another process's completion journal says of the item when the
//     record names one — one read, and one more for such a journal —
//     and with what the Cache defers of it (Read); the journal a record
//     written over a node names (Names);
//   - which of a fire's items their records, as read, say ran the fire
//     already (ranbefore.go: Cache.RanBefore).
//
// The lock discipline. The Cache owns its lock, taken only in its
// methods, and calls nothing outside this package under it: a leaf, which
// its callers may take under any of theirs. Its methods return copies or
// values the caller may keep, except the covers' spans, which no one
// changes.
//
// It may import the standard library, regcenter, internal/layout,
// job/internal/fireplan, job/internal/journal (a journal's entry read)
// and job/internal/stored; nothing of package job. It starts nothing.
package records
