// Package roster holds a scheduler's table of jobs: the runner of each job
// added, by name, the scheduler's state (new, started, shut down) and the
// names of the jobs some job added here runs after (awaited). It is the
// one place that takes the table's lock.
//
// A Roster holds its runners through a type parameter: it knows a runner
// only by the funcs given at New (its job's name, the jobs it runs after,
// and how to tell it that it is awaited), so that it never needs package
// job. Package job makes one Roster per Scheduler.
//
// It owns:
//
//   - the table and the state (roster.go): Add, which refuses a job once
//     shut down or under a name taken and, once started, runs the caller's
//     check over the jobs added; Get, Sorted, Names, Delete and Detach;
//     Start and Close, the state's two steps, each returning the jobs in
//     name order; Spawn, which starts a goroutine only while started;
//   - the awaited names (roster.go): a job's parents are marked awaited
//     when it is added (and all at once by NoteAwaited, for a reload), and
//     a job added after a job that awaits it is told at once.
//
// The lock discipline. The Roster owns its lock, taken only in its
// methods. Under it, it calls the funcs given at New, the check handed to
// Add and Start, and the Group's Go of Spawn: none may call the Roster
// back. It returns copies (Sorted's slice) the caller may keep.
//
// It may import the standard library and internal/startstop; nothing of
// package job. It starts nothing of its own: Spawn starts the caller's
// function on the caller's Group.
package roster
