// Package firing is the fire path's room: a fire's run on this instance
// as it flows forward, a value, from stage to stage (reserve → mark →
// start → complete). Package job enters the fire at its entries (a
// scheduled fire, a trigger, a make-up run, a failover claim, a backfill)
// and hands it on; nothing here calls back into package job.
//
// It owns:
//
//   - Job (job.go): the fire's compiled view of a job's config, filled
//     once when the config is compiled (package job's compile) and read
//     only after: what the book and the completions read of the job, its
//     retry policy, its schedule, its item parameters, its timeout, its
//     starting deadline and its parents.
//
// It may import the standard library, github.com/robfig/cron/v3,
// job/internal/book, job/internal/completion and job/internal/retry;
// never package job.
//
// It starts no goroutine and takes no lock of its own: a Job is read only
// once made.
package firing
