package job

import "github.com/shardjob/shardjob/job/internal/heldmarks"

// Held marks (job/internal/heldmarks): a running mark this instance made
// for a run of an item it is assigned stays after the run, for the fires
// after it, as long as the assignment stands; the keeper releases it when
// the item stops being this instance's to run.

// newKeeper returns the keeper of the runner's held marks; its Done is
// set once the completion stage, which asks it what to keep, is made.
func (r *runner) newKeeper(a *active) *heldmarks.Keeper {
	return &heldmarks.Keeper{RC: r.rc, Paths: r.paths, ServerID: r.serverID(), Held: &a.holds, Assumed: &a.cache,
		Book: r.book, Records: r.records, Fence: a.elect.SessionFence, Log: r.log}
}

// releaseMoved is the holds kicker's pass: the keeper's ReleaseMoved,
// when this instance holds marks under its session (none before the job
// fired here).
func (r *runner) releaseMoved() {
	sess := r.rc.Session()
	a := r.activeIfMade()
	if a == nil || a.holds.Count(sess) == 0 {
		return
	}
	ctx, cancel := r.coordCtx(sess)
	defer cancel()
	a.held.ReleaseMoved(ctx, sess)
}
