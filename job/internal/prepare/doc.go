// Package prepare holds the preparation of a job to run on this
// instance (Prep): whether the instance watches the job's disabled items
// and takes part in its election, the lock that serialises the steps that
// arm those (and the failover queue's watch), and the timer that prepares
// the job ahead of its next fire. Package job keeps one Prep per job and
// gives what each step does as funcs (Steps): the watch, the campaign
// (whose error this package names with the job), the session, the
// goroutine.
//
// It owns:
//
//   - Do, once and then never again; Again, the campaign under a new
//     session once Do has begun; Serially, other steps under the same
//     lock;
//   - Prepare, Do with the Steps; Sync, Prepare bounded under the
//     session of now, for a run about to start; Now, Sync on a goroutine
//     of the job's; CampaignAgain, Again with the Steps' campaign;
//   - Before and Stop, the timer on the scheduler's clock
//     (trigger.Clock).
//
// The lock discipline. Prep owns its two locks, taken only in its
// methods. Do, Again and Serially call their funcs under the first,
// which may therefore take any lock not held around a Prep call; the
// second, the timer's, calls only the clock and the stopping check under
// it.
//
// It may import the standard library, regcenter (the Session) and
// job/internal/trigger (the Clock and Timer types); nothing of package
// job. It starts nothing but the timer Before arranges, whose call runs
// on the clock's goroutine and is ended by Stop or by firing (the fn it
// runs is its caller's), and Now's preparation, through the Steps' Go.
package prepare
