// Package history records what a shardjob instance did, in a database:
// every execution of every sharding item (job, item, task id, fire time,
// kind, server, start, end, result, error, and the output the run recorded
// with job.RecordOutput) and every job.Event (job status
// changes such as paused, resharded or leader, and the instance's alarms,
// drain and health). It is shardjob's counterpart of ElasticJob's event
// trace.
//
// A [Recorder] is plugged into a scheduler with its SchedulerOptions. It
// never sits on the fire path: a record is handed to a bounded buffer
// without waiting, and the recorder's own goroutine writes the buffer in
// batches, one transaction each. When the database is slow or down the
// failed batch is retried with backoff while the buffer fills; once it is
// full, further records are dropped and counted (Stats.Dropped), and the
// drops are logged at most once per Config.DropLogInterval. Writing
// resumes by itself when the database answers again. Old rows are deleted
// by age and by count (Config.MaxAge, Config.MaxRows).
//
// The database is SQLite by default (a file next to the application, the
// pure-Go modernc.org/sqlite driver, WAL mode), or PostgreSQL (pgx) for a
// cluster whose instances share one history. The tables are created on
// Open if missing, the same on both. A program links the database it uses
// by importing package store/sqlite or store/postgres (see package store
// for why): one that keeps its history in SQLite links no PostgreSQL
// client, one on PostgreSQL no SQLite.
//
// It also keeps the audit trail of the operator's tools (who did what,
// when, from where, and the result): [Recorder.Audit] writes an entry at
// once, not through the buffer, so that the caller knows it is stored;
// [Recorder.EndAudit] records how the operation ended; QueryAudit reads
// the trail. Audit entries are kept Config.AuditMaxAge (90 days).
//
// Query and QueryEvents read a page of rows, newest first, with keyset
// paging (Filter.Before, Page.Next); a [Reader] reads without recording,
// as the shardjob command's "history" does. Package jobhttp serves the
// same pages as JSON.
//
//	import _ "github.com/shardjob/shardjob/store/sqlite"
//
//	rec, err := history.Open(ctx, history.Config{DSN: "/var/lib/shop/history.db"})
//	if err != nil { ... }
//	sched, err := job.NewScheduler(rc, append([]job.Option{job.WithServerID(id)}, rec.SchedulerOptions()...)...)
//	...
//	_ = sched.Shutdown(ctx)
//	_ = rec.Close(ctx) // writes what is buffered, within ctx's deadline
//
// The package stands above package job and below the HTTP handler and the
// shardjob command; package job does not import it.
package history
