package job

import (
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/assigned"
	"github.com/shardjob/shardjob/regcenter"
)

// The assignment stage of a fire (job/internal/assigned's Source): which
// items this instance runs, assumed from the previous fire's read and
// proved by the fire's own transaction, or read fresh (resharding first
// when due); and which of them were not held throughout since the
// previous fire, whose records are read for gaps (inherit.go).

// newSource returns the runner's source of its assignment.
func (r *runner) newSource(a *active) *assigned.Source {
	return &assigned.Source{
		Reader: &assigned.Reader{RC: r.rc, Paths: r.paths, Server: r.serverID(), Reshard: a.reshard, Log: r.log, Quote: quoteShort},
		Cache:  &a.cache, Held: a.held, Coord: r.coordCtx, Timeout: r.s.opts.reshardTimeout,
		Unmonitored: func() bool { return r.config().Unmonitored },
		Relead:      func() { r.s.trig.Relead(r.name) },
		ArmIdle:     r.watchIdle,
	}
}

// watchIdle arms the watch of this instance's sharding node (see
// assigned.Source), and returns its cancel. An event after a fire let
// pass idle may owe the items it gave that fire (catchup.go); a reshard
// may have moved items whose marks this instance keeps: the new owner
// waits for them (hold.go).
func (r *runner) watchIdle() (cancel func()) {
	return r.rc.Watch(r.paths.Flag(r.serverID(), layout.Sharding), regcenter.WatchNode, func(ev regcenter.Event) {
		if r.active().assigned.IdleEvent(ev) {
			r.goCatchUp()
		}
		r.kick.Kick(kickHolds)
	})
}
