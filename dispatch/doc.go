// Package dispatch runs one-off tasks inside time windows, under a global
// cap and a cap per worker (tenant), earliest acceptable start first, with
// timeouts, retries and crash recovery, on SQLite (embedded, one process)
// or PostgreSQL (any number of nodes).
//
// A client assigns a batch of tasks to a worker with an expected start and
// an end: every task may start from the expected start, and the batch's
// acceptable starts are spread evenly up to the end (see Assignment). A
// task starts once the clock has reached its expected start and a global
// and a worker slot are free; among the tasks waiting, the one with the
// earliest acceptable start goes first (ties: expected start, then uuid),
// across all nodes. The start listener (Config.OnStart) gets the task and
// a context; the client calls Finish when the work is done, possibly much
// later and from another process.
//
// Guarantees:
//
//   - Caps are never exceeded, cluster-wide: the counters live in the
//     database and are raised in the transaction that starts a task, under a
//     guard, with the global row locked; a slot is freed only by a Finish, a
//     timeout, a cancel, a failed attempt, or the lapse of the lease of the
//     node that holds it.
//   - Starts are at least once: a task whose node dies (kill -9, a lost
//     database connection for longer than the lease) is started again under
//     its retry policy, and a Finish or result from the dead attempt is
//     rejected with ErrStaleLease. A node that cannot renew its lease
//     cancels its handlers' contexts before the lease can lapse; work that
//     ignores its context may still overlap with the next attempt.
//   - A task that is not finished within its timeout is timed out
//     (Config.OnTimeout), its slots are freed, and it is retried with
//     exponential backoff and jitter until its retries are spent; then
//     Config.OnFail runs once on the node that failed it.
//
// Times are taken from Config.Clock on the node that acts, so nodes'
// clocks should agree to well within the lease TTL.
//
// A program links the database it runs on by importing package
// store/sqlite or store/postgres (see package store for why), and no
// other: a dispatcher on SQLite links no PostgreSQL client, one on
// PostgreSQL no SQLite. Open refuses a Config.Driver whose package the
// program did not import.
//
// NewHandler serves the same operations as JSON over HTTP, and Webhooks
// delivers start and fail notices to a worker's URL for clients not written
// in Go; a receiver checks them with Verify and a ReplayGuard. With
// Config.TracerProvider every dispatch is an OpenTelemetry span
// (DispatchSpanName), carried by OnStart's context and a start notice's
// traceparent header; so is every timeout and fail notice
// (TimeoutSpanName, FailSpanName); and each of these spans links to the
// span of the Assign call that created its task.
// docs/dispatch.md has the model, the guarantees and the figures.
package dispatch
