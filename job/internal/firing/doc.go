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
//     starting deadline and its parents;
//   - Fire (fire.go): one fire's run as it passes from stage to stage,
//     with what the stages learn of its items on the way, and the pure
//     reads of it: the fire an item's run starts at, what its record said
//     before, the attempts a previous owner failed, the result of a run
//     that never started because the runner is stopping;
//   - the execute part (execute.go): the Firer, what the stages share for
//     one job, set once; an item's run and a range's run of a fire (the
//     run's facts as values in a Call, its attempts handed to
//     job/internal/execute), the fire's span and its fire listeners, and
//     the fire's task id;
//   - the leaves of a fire's start (leaves.go), each of which narrows the
//     fire or completes its items unrun and returns: a make-up run
//     narrowed to the fires still owed and to the starting deadline, the
//     wait for a dependent job's parents and the skip when they failed,
//     the item keys read and the failure when they cannot be, a backfill's
//     recheck, and the items shutdown stopped before their fire's time.
//     The events package job raises for them (fires expired, a parent
//     failed) go out as the Firer's function values with plain values;
//     package job builds the Event;
//   - the run stage (stage.go): a fire's items reserved (a trigger's), marked,
//     narrowed by the leaves, run (a lone item on the caller's goroutine,
//     others each on one of the runner's) and handed to the Completer;
//   - the mark stage (mark.go): the running marks made by the job's
//     Marker, and the fire's answers for each item it cannot mark (owed a
//     misfire and watched, handed back, or tried again);
//   - the owed runs and the release (owed.go, claim.go): the make-up runs
//     of this instance's debts in a turn of the fire order (the Order, which
//     the Firer owns and package job's entries take turns in), what a
//     released item starts (a waiting backfill fire, a queued trigger, the
//     runs it is owed, the failover queue), and the claims from the
//     failover queue.
//
// The user's Job is called by package job through the Executor seam:
// package job builds the job's ShardingContext or RangeContext from a
// Call and calls the job under its timeout, a panic turned into an
// error; the Firer calls the Executor, which calls nothing back.
//
// It may import the standard library, github.com/robfig/cron/v3, package
// regcenter (a fire's session), package listener, internal/layout,
// job/internal/assume, job/internal/backfilling, job/internal/book,
// job/internal/completion, job/internal/deps, job/internal/execute,
// job/internal/fireplan, job/internal/itemkeys, job/internal/makeup,
// job/internal/marks, job/internal/failover, job/internal/flags,
// job/internal/inherit, job/internal/runs, job/internal/configcheck,
// job/internal/records, job/internal/retry, job/internal/schedule and
// job/internal/tracing, internal/parallel; never package job.
//
// Its goroutines are the runner's (Go), which the job's stop waits for,
// and a make-up run's groups, waited for where they start. Its one lock is
// the Order's; a Job is read only once made, a Firer is set once (the
// Order aside), and a Fire is held by one stage at a time (the runs it
// starts read it). The Book, the Inherited and the Completer it calls lock
// inside their methods. What it calls of package job is given as function
// values (Triggered, KickFailover, Ready, Preempt, Go), never package job
// itself.
package firing
