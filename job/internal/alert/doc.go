// Package alert keeps a scheduler's bookkeeping of its alerts for late
// fires and for jobs not run (job.Config.Alert).
//
// A [Book] is told when an item's run begins and ends. A fire with a late
// bound gets one timer per fire on this instance, armed when its first run
// here begins and stopped when its last run here ends; a timer that fires
// with runs still going raises the fire's late alert, once across the
// cluster: the instance whose creation of /{job}/alerts/late/{fire} (ms)
// succeeds raises it, the others find the node and stay silent. Old nodes
// are removed by the next instance that wins one.
//
// A job with a bound publishes its entry in the namespace's index,
// /.alerts/jobs/{job} (JSON: the bounds, when it was first registered with
// them, its last success known and when it was last reported), written when
// the job registers and when a success is NotRunFor/8 newer than the one
// written. A [Checker], run by one instance per namespace (the leader of
// /.alerts/leader), reads the index and reports jobs whose last success is
// older than their bound, whether or not an instance runs them.
//
// Registry work happens on the Book's one goroutine (Run) and the Checker's,
// never on a run's: Begin and End change memory only.
//
// It owns:
//
//   - the Book (alert.go): the late timers, the late nodes won, the index
//     entries published, each job's last success known here;
//   - the Checker (checker.go): a pass over the index, the entries read
//     when due, the jobs reported; Scan, the same read once for a probe;
//   - the Candidate (candidate.go): this instance's candidacy for the
//     checker (the election on LeaderLatch, joined by Campaign and left by
//     Leave), which runs the Checker while elected; a nil Candidate, an
//     instance that does not check, joins nothing;
//   - what a Raised alert says (alert.go: Raised.Err), wrapping the
//     caller's sentinel for its kind.
//
// Package job keeps the options, the public types, and the turning of a
// Raised alert into its events and its job's handler (the Raise it hands
// over), and says whether a job reported still has a bound (Confirm).
//
// The lock discipline. The Book and the Checker own their locks, taken
// only in their methods; the Book calls Raise and the registry on its
// goroutine, under no lock of its own, and the Checker holds its lock
// across a pass (one pass at a time), Confirm and Raise included: those
// may not call the Checker back. The Candidate holds no lock.
//
// It may import the standard library, regcenter and election (the
// checker's latch); nothing of package job. What it starts: the Book's
// Run and the Checker's Run go on goroutines of the caller's (Book.Run
// from the scheduler's Start; the Checker's through the Spawn handed to
// NewCandidate, each time this instance is elected), which end with the
// contexts the caller ends before its shutdown returns.
package alert
