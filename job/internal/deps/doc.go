// Package deps holds the dependencies between jobs (Config.After): the
// graph of which job runs after which, checked where all its jobs are
// known, and a dependent run's wait for its parents' fires, read from
// their completion records. Package job reads each Config, hands the
// graph here as names (a Node per job), and judges each edge itself —
// whether a parent keeps records to wait on and fires on its dependent's
// schedule — through the function Check is given; it makes each Problem
// a config error on the job named. For a wait, package job decides which
// fires (Bound here: for how long), and says what a parent is here (a Parent: its
// paths, its items, its schedule); every error Await returns, it wraps in
// its ErrParentFailed.
//
// It owns:
//
//   - the graph (graph.go): Parents, the names a Config.After lists;
//     Check, the parents missing, the edges refused and each cycle, named
//     once, in an order that does not depend on a map's;
//   - the wait (wait.go): Bound, how long a run waits when its job sets
//     no timeout (until its next fire, LastFireWait after its last);
//     Await, which reads every parent item's
//     completed record each poll (100 ms) until they cover the fires of
//     the nominal times waited for, and says which parent's run of those
//     fires failed, or that the wait timed out or was stopped.
//
// It may import the standard library, robfig/cron (a parent's schedule),
// regcenter (reads only: Get), internal/layout, internal/parallel,
// job/internal/schedule (a parent's fire of a nominal time) and
// job/internal/stored (the records' codec); nothing of package job. It
// keeps no state. Await runs on its caller's goroutine; its reads of one
// parent's items run side by side (at most 32) on goroutines that have
// all returned before the next parent is read.
package deps
