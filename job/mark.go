package job

import (
	"time"

	"github.com/shardjob/shardjob/job/internal/marks"
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
