// Package completion holds the completion stage of a fire: what ends the
// runs of a job's items on this instance. The runner hands it each run's
// Result (built as the run ends, is settled, skipped or never started);
// the Completer writes the completion transactions and releases the items
// through the runner (Config.Release).
//
// It owns:
//
//   - the Result a run hands forward, and the group commit of a fire's
//     results (completer.go): a transaction carries the results that
//     arrived while the previous one was in flight or within linger, at
//     most as many as fit in TxnBytes;
//   - the order of an item's completions: one whose run followed the
//     item's previous run while that run's completion was being written
//     (book.Book.After) waits for it and adds to the record it wrote
//     (completer.go); a completion that writes a kept item's record tells
//     the book so (book.Book.Writing, write.go);
//   - a completion transaction (write.go): per item its running mark
//     deleted (unless held for the next fires), its failover claim and
//     queue entry, a hand-over entry for a run cut short by shutdown, its
//     completed record written over the version known (or created) and
//     its misfire node deleted, led by the session's fence; what it paid
//     given to the book (book.Book.Paid) and the records cache;
//   - its retries (retry.go): the unfenced form once the session's
//     generation ended, the corrections of a refused operation, the
//     records re-read when another instance wrote them, a read behind the
//     write it follows waited out, and the split of a transaction too
//     large;
//   - the records written behind (flush.go): which completion defers its
//     record (the record interval), and the flushes of deferred records —
//     before a release (FlushReleased), stale ones (FlushStale), all of
//     them (FlushAll), or any set (Flush);
//   - the job's use of the completion journal (journal.go): the deferred
//     records put in it, and what the written records list dropped from
//     it.
//
// The reading of records is not here: records.Reader reads a node with
// what another process's journal and this instance's deferred record add
// (Reader.Read), and names the journal a record written over a node names
// (Reader.Names); records.Cache sorts a fire's fresh items by the records
// read (Cache.RanBefore). Those hold the Reader's and the Cache's state
// and nothing of a completion, and package job's fire stages read records
// through them too.
//
// Registry round trips: one transaction per batch in the steady state
// (none when every record is deferred, then one shared journal write);
// the unfenced form reads each item's record once; a refused operation
// costs the re-read of the records it names and a transaction more; a
// flush one transaction per TxnBytes of records, and a read per record
// written meanwhile.
//
// The lock discipline. The Completer holds no lock and keeps no state of
// its own between completions: every call works on its own completion
// value, on the goroutine that calls it. It takes the locks of the parts
// it is given only through their methods (records.Cache, book.Book,
// book.Ledger, the claims' failover.State, journal.Journal, the
// Fencer's), one at a time, except book.Book.Paid, whose run it gives
// calls only the records.Cache, a leaf. It calls Config.Keep and
// Config.Release, the runner's, with no lock held.
//
// It may import the standard library, regcenter, internal/layout,
// failover (the queue's entries, for a hand-over), job/internal/book,
// job/internal/failover (the claims), job/internal/fireplan,
// job/internal/journal, job/internal/records and job/internal/stored;
// nothing of package job. It starts no goroutine: a completion waits, on
// its caller's goroutine, for its results, its retries' backoff and the
// journal's write; Config.Release starts the runner's.
package completion
