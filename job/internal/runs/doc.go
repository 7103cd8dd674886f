// Package runs holds the generic machinery a job's runs go through, which
// needs no runner and sends nothing to the registry: the goroutines they
// run on, the wake-ups that start work, the contexts a run is given and
// the output it records. Package job owns the goroutines' owners (the
// scheduler's groups) and their ends, and the errors a refused output
// returns; this package only keeps and hands out the goroutines those
// owners start.
//
// It owns:
//
//   - the Workers (workers.go): the scheduler's kept goroutines, a task
//     to the one idle last or to a new one, those idle through a reap
//     period ended, all of them by Close;
//   - the Kicker (kicker.go): a function run on a goroutine whenever
//     kicked, never two at once, the kicks that arrive meanwhile coalesced
//     into one more run; and Kickers, up to MaxKicks such tasks sharing
//     one lock, spawn and function (a job's);
//   - the fire order (order.go): the turns by which a job's scheduled
//     fires, and its make-up runs, reserve their items in fire order, and
//     the reserving lock they take in turn;
//   - the run contexts (ctx.go): a run's Ctx, which makes its Done channel
//     only when something asks for one, and the SessionCtx its parent is,
//     one per registry session;
//   - a run's output (output.go): the Output slot a run records its
//     output in (job.RecordOutput) until its end takes it, and the JSON
//     encoding it is recorded in (EncodeOutput);
//   - a value made at its first use (lazy.go): Lazy, what a job makes only
//     once it works, made once under its leaf lock and read without it.
//
// The lock discipline. Each type owns its lock, taken only in its
// methods, and calls nothing outside this package under it: a Kicker, and
// a Kickers, calls its spawn and its function with no lock held. An
// Order's turns lock is a leaf; its reserving lock is the caller's to hold
// while it reserves, taken after its turn comes.
//
// It may import the standard library and regcenter (a run's Session);
// nothing of package job. The goroutines it starts: a worker, which ends
// once Close has begun (a busy one when its task returns) or when a reap
// finds it idle through a whole period; a Kicker's run (a Kickers
// task's), on its spawn's goroutine, which ends when no kick (of its task)
// is pending; and Close's wait, which ends with the workers.
package runs
