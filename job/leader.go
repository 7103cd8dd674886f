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

// settleWithin is how near a job's next fire must be for a reshard flag
// to be answered by its leader at once (leader.Office's Soon), and for
// Start to wait for that answer (settle): a few fire leads. Farther off,
// the reshard comes right before the fire, as ever; nearer, a fire would
// wait for it, and a fleet starting at once would see its first fires
// late, all of them waiting for the same storm of reshards.
const settleWithin = 3 * time.Second

// wireDuties makes the duties' mechanisms, each a room's, with what
// they need of the runner and of a's other parts: the leader's office, the
// resharder, the leader's queueing of departed servers' items, and the
// failover claimer (makeActive).
func (r *runner) wireDuties(a *active) {
	a.office = &leader.Office{
		Duties: a.lead, RC: r.rc, Paths: r.paths, Log: r.log, Leading: a.elect.IsLeader, Go: r.goFunc,
		KickMembership: func() { r.kick.Kick(kickMembership) },
		KickReshard:    func() { r.kick.Kick(kickReshard) },
		KickEpoch:      func() { r.kick.Kick(kickEpoch) },
		Soon:           func() bool { return r.fireWithin(r.config(), settleWithin) },
		Failover:       func() bool { return r.config().Failover },
		QueueDeparted:  r.queueDeparted,
		Repair:         func(ctx context.Context) error { return a.reshard.RepairWhileLive(ctx) },
		Fault: func(ctx context.Context, servers reshard.Servers) (string, error) {
			return r.assignmentCheck(r.config()).FaultWith(ctx, servers)
		},
	}
	a.reshard = &reshard.Resharder{
		RC: r.rc, Paths: r.paths, Name: r.name, Server: r.serverID(), Log: r.log,
		Turn: a.lead, Placer: r.s.placer, Leading: a.elect.IsLeader, Fence: a.elect.Fence,
		Config: r.reshardSpec, QueueDeparted: r.queueDeparted,
		Unplaced: func(n int) { r.s.emit(Event{Kind: EventUnplaced, Job: r.name, Units: n}) },
		Now:      r.s.opts.now, Lead: r.s.opts.fireLead, Life: r.ctx.life,
		Counters: reshard.Counters{Reshards: &r.counters.reshards, Errors: &r.counters.reshardErrors, Unplaced: &r.counters.unplaced},
	}
	a.departed = &claims.Departures{RC: r.rc, Paths: r.paths, Job: r.name, Log: r.log,
		Fence: a.elect.Fence, Cleared: a.reshard.NoteBooksBehind, Completed: r.completedFire, Now: r.s.opts.now, Lead: r.s.opts.fireLead,
		Retried: func(ctx context.Context, item int, fire time.Time) (int, error) {
			return marks.ReadRetry(ctx, r.rc, r.paths, item, fire, r.reportBadValue)
		}}
	gone := func(p string, fn func()) func() {
		return claims.OnGone(r.rc, p, r.goFunc, func() (context.Context, context.CancelFunc) { return r.coordCtx(r.rc.Session()) }, fn)
	}
	a.claimer = &claims.Claimer{Watch: gone, State: a.fo, RC: r.rc, Paths: r.paths, Job: r.name, Server: r.serverID(), Log: r.log,
		SessionFence: a.elect.SessionFence, Kick: func() { r.kick.Kick(kickFailover) }, Now: r.s.opts.now}
}

// wirePreparation makes what an idle job needs of its duties, with the
// runner: the preparation's steps (joining the election makes the active
// parts: campaign) and this server's flags.
func (r *runner) wirePreparation() {
	r.prep.Steps = prepare.Steps{WatchItems: r.watchDisabledItems, Campaign: r.campaign, Job: r.name, Session: r.rc.Session,
		Timeout: r.s.opts.reshardTimeout, Go: r.goFunc, Log: r.log}
	r.flags = flags.New(r.rc, r.paths, r.serverID(), r.log, r.s.opts.reshardTimeout)
}

// onElected takes up the leader's duties (leader.Office.Elected).
func (r *runner) onElected(ctx context.Context) {
	a := r.active()
	a.lead.BumpGen()
	r.s.emit(Event{Kind: EventLeader, Job: r.name})
	a.office.Elected(ctx)
}

// reshardOnRequest is the leader's answer to a waiting instance's request.
func (r *runner) reshardOnRequest() {
	if !r.leading() {
		return
	}
	ctx, cancel := r.coordCtx(r.rc.Session())
	defer cancel()
	r.active().reshard.AnswerRequest(ctx)
}

func (r *runner) onRevoked() { r.active().office.Revoked() }

// checkMembership runs on the leader after a server-related change
// (leader.Office.Membership).
func (r *runner) checkMembership() {
	sess := r.rc.Session()
	ctx, cancel := context.WithTimeout(sess.Ctx(), r.s.opts.reshardTimeout)
	defer cancel()
	r.active().office.Membership(ctx)
}
