// Package marks holds the mark stage of a run: the running marks
// (execution/{item}/running, ephemeral) of the items a run has reserved,
// created in transactions of at most PerTxn items, with a fire's proof of
// its assignment in the first and a check of each known record beside its
// item's mark.
//
// It owns the marking protocol (mark.go): the transactions and their
// retries — a missing item node made, a stale mark of this session or a
// persistent one removed, another run's mark waited for once and then
// probed for in parallel —, and what the transactions prove. It decides
// nothing about an item that cannot be marked: it hands each such item,
// as it meets it, to the run's Outcomes (the runner owes it, or hands a
// failover claim back, and releases it), and returns the items marked.
//
// Registry round trips: one transaction per chunk in the steady state; a
// first fire adds one read of the execution node's children and one
// transaction of the missing item nodes; another run's mark costs one
// watch (WatchNow) and, above probeAbove items, one read per item of the
// chunk, 32 at a time; the stale marks of this session (a release that
// failed leaves a whole assignment's), above probeAbove items, one read
// per item, 32 at a time, and one fenced transaction of deletes per
// PerTxn of them — never one failed transaction each.
//
// It may import the standard library, regcenter, internal/layout,
// internal/parallel, job/internal/assume (the marks held, the moved
// assumption's error), job/internal/records and job/internal/stored;
// nothing of package job.
//
// It also owns the release of held marks (release.go): DeleteHeld, the
// fenced transactions that delete marks this instance kept across fires,
// PerTxn at a time; Lost, which of them are no longer this session's;
// and regcenter.MultiDropping, a transaction sent again without the ops that failed
// harmlessly (a delete of a node gone), which a job's leave uses too; and
// an item's retry node (retry.go): NoteRetry, the failed attempts of the
// fire its owner waits to retry, and ReadRetry, the count a run that takes
// the fire over continues. It keeps no state between calls and starts no
// goroutine that outlives one (parallel.Each's end before it returns).
package marks
