// Package journal holds the completion journal: this process's node
// (/.journals/{token}) that a completion whose record is written behind
// puts what the record would say in, and the registry protocol of the
// journals other processes left. job/internal/completion decides which
// completions are journalled and writes the records; package job gives a
// sweep its jobs' schedules; this package keeps the journal's entries,
// reads and writes journal nodes, and sweeps the journals of processes
// that are gone, with what it is handed.
//
// It owns:
//
//   - the Journal (journal.go): by job and item the fires covered that
//     the records may not list yet; Put, which group-commits them (the
//     first put after a write waits Window for others, one write in
//     flight at a time, each carrying the whole journal, refused with
//     ErrFull beyond MaxBytes); Covered, which drops what a record
//     written here lists; RemoveIfCovered, at shutdown; SweepDue, at most
//     one sweep per period; and the intervals (RecordInterval, Window,
//     OrphanAge, Sweep);
//   - the journal nodes (nodes.go): Read, what another process's journal
//     says of an item; List; ReadOrphan and DeleteOrphan, a journal left
//     unwritten for OrphanAge and its deletion over the version read;
//     Fold, an entry added to the record that still names its journal;
//   - the sweep (sweep.go): at most once per period, every journal left
//     unwritten for OrphanAge folded into the records of the jobs it is
//     handed the schedules of, and deleted once every job it names was.
//
// Registry round trips. A Put costs at most one write of the node (a set,
// or a create when it is not there yet), shared by every put that arrives
// meanwhile; RemoveIfCovered one delete. Read and ReadOrphan read one
// node, List one list; DeleteOrphan deletes one; Fold reads and writes
// the record, over its version, at most eight times; a sweep lists the
// journals and reads each one, folding and deleting the orphans.
//
// The lock discipline. The Journal owns its lock, taken only in its
// methods, and calls nothing outside this package under it but the node's
// codec: the registry is called and the log written with it released.
// Sweep calls the schedules it is handed with it released. The other
// functions keep no state.
//
// It may import the standard library, regcenter, internal/layout,
// job/internal/fireplan (the covers and the schedule a fold adds over)
// and job/internal/stored (the journal's and the record's codecs);
// nothing of package job. It starts no goroutine.
package journal
