package job

import (
	"context"
	"time"

	claims "github.com/shardjob/shardjob/job/internal/failover"
	"github.com/shardjob/shardjob/job/internal/flags"
	"github.com/shardjob/shardjob/job/internal/leader"
	"github.com/shardjob/shardjob/job/internal/marks"
	"github.com/shardjob/shardjob/job/internal/prepare"
	"github.com/shardjob/shardjob/job/internal/reshard"
)

// The leader's duties beyond resharding (job/internal/leader's Office):
// watching which servers are online and able to take items, and flagging
// a reshard when that changes. The duties' mechanisms are wired here.

// wireDuties makes the duties' mechanisms, each a room's, with what
// they need of the runner: the leader's office, the resharder, the
// leader's queueing of departed servers' items, the failover claimer, the
// preparation's steps, and this server's flags.
func (r *runner) wireDuties() {
	r.office = &leader.Office{
		Duties: r.lead, RC: r.rc, Paths: r.paths, Log: r.log, Leading: r.elect.IsLeader, Go: r.goFunc,
		KickMembership: func() { r.kick.Kick(kickMembership) },
		KickReshard:    func() { r.kick.Kick(kickReshard) },
		KickEpoch:      func() { r.kick.Kick(kickEpoch) },
		Failover:       func() bool { return r.config().Failover },
		QueueDeparted:  r.queueDeparted,
		Repair:         func(ctx context.Context) error { return r.reshard.RepairWhileLive(ctx) },
	}
	r.reshard = &reshard.Resharder{
		RC: r.rc, Paths: r.paths, Name: r.name, Server: r.serverID(), Log: r.log,
		Turn: r.lead, Placer: r.s.placer, Leading: r.elect.IsLeader, Fence: r.elect.Fence,
		Config: r.reshardSpec, QueueDeparted: r.queueDeparted,
		Unplaced: func(n int) { r.s.emit(Event{Kind: EventUnplaced, Job: r.name, Units: n}) },
		Now:      r.s.opts.now, Lead: r.s.opts.fireLead, Life: r.ctx.life,
		Counters: reshard.Counters{Reshards: &r.counters.reshards, Errors: &r.counters.reshardErrors, Unplaced: &r.counters.unplaced},
	}
	r.departed = &claims.Departures{RC: r.rc, Paths: r.paths, Job: r.name, Log: r.log,
		Fence: r.elect.Fence, Completed: r.completedFire, Now: r.s.opts.now, Lead: r.s.opts.fireLead,
		Retried: func(ctx context.Context, item int, fire time.Time) (int, error) {
			return marks.ReadRetry(ctx, r.rc, r.paths, item, fire, r.reportBadValue)
		}}
	gone := func(p string, fn func()) func() {
		return claims.OnGone(r.rc, p, r.goFunc, func() (context.Context, context.CancelFunc) { return r.coordCtx(r.rc.Session()) }, fn)
	}
	r.claimer = &claims.Claimer{Watch: gone, State: r.fo, RC: r.rc, Paths: r.paths, Job: r.name, Server: r.serverID(), Log: r.log,
		SessionFence: r.elect.SessionFence, Kick: func() { r.kick.Kick(kickFailover) }, Now: r.s.opts.now}
	r.prep.Steps = prepare.Steps{WatchItems: r.watchDisabledItems, Campaign: r.elect.Campaign, Job: r.name, Session: r.rc.Session,
		Timeout: r.s.opts.reshardTimeout, Go: r.goFunc, Log: r.log}
	r.flags = flags.New(r.rc, r.paths, r.serverID(), r.log, r.s.opts.reshardTimeout)
}

// onElected takes up the leader's duties (leader.Office.Elected).
func (r *runner) onElected(ctx context.Context) {
	r.lead.BumpGen()
	r.s.emit(Event{Kind: EventLeader, Job: r.name})
	r.office.Elected(ctx)
}

// reshardOnRequest is the leader's answer to a waiting instance's request.
func (r *runner) reshardOnRequest() {
	if !r.elect.IsLeader() {
		return
	}
	ctx, cancel := r.coordCtx(r.rc.Session())
	defer cancel()
	r.reshard.AnswerRequest(ctx)
}

func (r *runner) onRevoked() { r.office.Revoked() }

// checkMembership runs on the leader after a server-related change
// (leader.Office.Membership).
func (r *runner) checkMembership() {
	sess := r.rc.Session()
	ctx, cancel := context.WithTimeout(sess.Ctx(), r.s.opts.reshardTimeout)
	defer cancel()
	r.office.Membership(ctx)
}
