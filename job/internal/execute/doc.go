// Package execute holds the attempts of one run of a fire's items: the
// listeners told before and after each attempt, the attempt's span, the
// fire's lateness armed and ended, the outcome read from the run's
// context (completed, failed, replaced by a later fire, cut short), and,
// for a job with a retry policy, whether another attempt follows and the
// wait for it. Package job builds the call (the job's Execute or
// ExecuteRange with its ShardingContext, bounded by the job's timeout,
// a panic turned into an error) and hands it here with the run's facts as
// values; the Result goes forward to the completion stage.
//
// It owns:
//
//   - the Stage (stage.go): what the runs of every job of a scheduler
//     share — the listeners, the alert book, the wait for a time — and
//     Run, the attempt loop of one run, whose job's log, life and retry
//     counter come with the run's facts;
//   - a job's runs (job.go): Job, what the runs of one job share, and
//     Of, one run's facts made from its listeners' event, its items, its
//     fires and its retry policy (the note of a retry's count in the
//     registry, marks.NoteRetry, included); and Bounded, a call under a
//     deadline whose expiry fails the call with the caller's sentinel.
//
// The lock discipline: none; a Stage and a Job are read only once made.
// It may import the standard library, package listener, package
// regcenter (a Job's registry, written through job/internal/marks),
// internal/layout, job/internal/alert, job/internal/book,
// job/internal/completion, job/internal/fireplan, job/internal/marks,
// job/internal/retry and job/internal/tracing; nothing of package job. It
// starts no goroutine: Run returns when the run's last attempt has, and
// Bounded when its call has.
package execute
