// Package trigger holds the timer heap that fires a scheduler's jobs: one
// goroutine and one timer of a Clock, whatever the number of jobs, each
// job's next fire dispatched a lead ahead of its time unless the job's
// fires send no request. Package job sets and removes each job's schedule
// here, tells it when a job's need for a lead may have changed, and runs
// it on a goroutine of the scheduler's; a fire's work is the job's fire
// function, which this package only calls.
//
// It owns:
//
//   - the Trigger (trigger.go): the heap of the jobs' next fires, each
//     job's schedule, fire function and quickness as last asked, and the
//     loop (Run) that dispatches the fires due and collapses those missed
//     over a pause into the latest one;
//   - the Clock it fires by, and its Timer: the methods of package job's
//     Clock it needs;
//   - the Gates (gates.go): the channels fires dispatched ahead of their
//     time wait on, one channel and one timer of the Clock per time.
//
// The lock discipline. The Trigger owns its lock, taken only in its
// methods. Under it, it calls a job's fire function and quick function,
// which must not block and must not call the Trigger, and the Clock.
//
// It may import the standard library, robfig/cron (a job's Schedule) and
// job/internal/fireplan (when a fire is dispatched: DueAt); nothing of
// package job. It starts no goroutine of its own: Run runs on its
// caller's, and the Clock's timer calls back on the Clock's.
package trigger
