// Package stored holds the values package job keeps in the registry about
// a job's runs, and their codecs: what each node's bytes mean, how they
// are written, and which bytes are refused. Package job reads and writes
// the nodes; this package sees only their bytes, and keeps no state but
// BadValues'.
//
// It owns:
//
//   - the bounds every stored value is read within (value.go): at most
//     MaxValueBytes, times from 1970 to 9999, and a refusal that wraps
//     ErrBadValue — a value that does not decode is read as absent or
//     repaired, never as a removal; BadValues remembers which version of
//     a node was reported, so that each is reported once, and Report
//     (report.go) logs it so;
//   - the marks (marks.go): an item's running mark (Running) and misfire
//     mark (Misfire);
//   - the completed record (completed.go): Completed, what it says ran
//     (Cover, over fireplan's Cover), the recent failed runs it lists
//     (FailedAfter, Failure), the error it keeps (RecordedError);
//   - the completion journal's value (journal.go): Journal, by job and
//     item the fires covered that records may not list yet.
//
// The encoders write what encoding/json writes, byte for byte (the
// hand-written ones without its reflection, being on every fire's path),
// so that values already stored decode the same and operators' tools read
// them; the decoders are bounded and refuse a hostile value whole.
//
// It may import the standard library, internal/docsubset (a value's start
// quoted in a report) and job/internal/fireplan; nothing of package job.
// BadValues owns its lock, a leaf: nothing is called under it (Report
// logs after First has returned).
package stored
