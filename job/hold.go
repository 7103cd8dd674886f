package job

import "github.com/shardjob/shardjob/job/internal/heldmarks"

// Held marks (job/internal/heldmarks): a running mark this instance made
// for a run of an item it is assigned stays after the run, for the fires
// after it, as long as the assignment stands; the keeper releases it when
// the item stops being this instance's to run.

// newKeeper returns the keeper of the runner's held marks; its Done is
// set once the completion stage, which asks it what to keep, is made.
func (r *runner) newKeeper() *heldmarks.Keeper {
	return &heldmarks.Keeper{RC: r.rc, Paths: r.paths, ServerID: r.serverID(), Held: &r.holds, Assumed: &r.cache,
		Book: r.book, Records: r.records, Fence: r.elect.SessionFence, Log: r.log}
}

// releaseMoved is the holds kicker's pass: the keeper's ReleaseMoved,
// when this instance holds marks under its session.
func (r *runner) releaseMoved() {
	sess := r.rc.Session()
	if r.holds.Count(sess) == 0 {
		return
	}
	ctx, cancel := r.coordCtx(sess)
	defer cancel()
	r.held.ReleaseMoved(ctx, sess)
}
