package job

import (
	"context"
	"time"

	"github.com/shardjob/shardjob/job/internal/marks"
	"github.com/shardjob/shardjob/regcenter"
)

// The mark stage is job/internal/firing's (Firer.Mark), its Marker
// job/internal/marks'.

// markGoneWait is Marker.GoneWait: how long a marking transaction that
// met another instance's mark waits, once, for it to go (a test
// lengthens it).
var markGoneWait = 250 * time.Millisecond

// newMarker returns the runner's Marker.
func (r *runner) newMarker(a *active) *marks.Marker {
	return &marks.Marker{Center: r.rc, Paths: r.paths, Server: r.serverID(), Log: r.log,
		Holds: &a.holds, Cache: r.records, Fence: a.elect.SessionFence, GoneWait: markGoneWait}
}

// sweepEnded removes, as the job registers again under sess, the running
// marks and failover claims an ended generation of sess's session left
// (marks.Ended.Sweep): not the items a run of that generation still holds,
// nor those whose deferred records are still to be written. A job that
// never worked here made none.
func (r *runner) sweepEnded(ctx context.Context, sess *regcenter.Session) {
	a := r.activeIfMade()
	if a == nil {
		return
	}
	prev, _ := r.book.Session()
	a.ended.Sweep(ctx, prev, sess, func(item int) bool {
		_, pending := r.records.PendingCover(item)
		return pending || r.book.IsRunning(item)
	})
}

// afterEnded removes the marks and claims of items whose runs under ended,
// a generation that ended, have just written their completions, when the
// live session is a later generation of the same one
// (marks.Ended.AfterRun).
func (r *runner) afterEnded(a *active, ended *regcenter.Session, items []int) {
	live := r.rc.Session()
	if live == nil || live == ended || live.ID() != ended.ID() {
		return
	}
	ctx, cancel := r.coordCtx(live)
	defer cancel()
	a.ended.AfterRun(ctx, ended, live, items)
}
