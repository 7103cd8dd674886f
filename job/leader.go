package job

import (
	"context"
	"slices"

	"github.com/shardjob/shardjob/job/internal/leader"
	"github.com/shardjob/shardjob/job/internal/placement"
	"github.com/shardjob/shardjob/job/internal/reshard"
	"github.com/shardjob/shardjob/regcenter"
)

// The leader's duties beyond resharding: watching which servers are online
// and able to take items, and flagging a reshard when that changes.

// onElected takes up the leader's duties: it flags a reshard (the previous
// leader may have died in the middle of one), watches the servers, and
// reshards at once when an instance about to fire asks for it.
func (r *runner) onElected(ctx context.Context) {
	r.lead.BumpGen()
	r.s.emit(Event{Kind: EventLeader, Job: r.name})
	r.lead.SetSharded(nil)
	r.goFunc(func() {
		r.setNecessary(ctx)
		r.watchServers(ctx)
		if r.lead.Has(leader.RequestWatch) || ctx.Err() != nil {
			return
		}
		// An instance about to fire asks for a reshard by writing the
		// flag's data: reshard at once rather than at our next fire.
		_, cancel, err := r.rc.WatchNow(ctx, r.paths.Necessary(), regcenter.WatchNode, func(ev regcenter.Event) {
			switch ev.Type {
			case regcenter.EventDataChanged, regcenter.EventResync:
				r.kick.reshard.Kick()
			case regcenter.EventCreated:
				r.kick.epoch.Kick() // a flag set by hand moves no epoch
			}
		})
		if !r.lead.Keep(leader.RequestWatch, cancel, r.elect.IsLeader) {
			cancel()
			return
		}
		// A request written before the watch was armed (an instance
		// draining, or about to fire, while nobody led) is answered now:
		// the flag's data names who asked; the leader's own flag has none.
		if err == nil {
			if data, _, err := r.rc.Get(ctx, r.paths.Necessary()); err == nil && len(data) > 0 {
				r.kick.reshard.Kick()
			}
		}
	})
}

// reshardOnRequest is the leader's answer to a waiting instance's request.
func (r *runner) reshardOnRequest() {
	if !r.elect.IsLeader() {
		return
	}
	sess := r.rc.Session()
	ctx, cancel := r.coordCtx(sess)
	defer cancel()
	if due, _, err := r.rc.Exists(ctx, r.paths.Necessary()); err != nil || !due {
		return
	}
	if err := r.reshard(ctx); err != nil {
		r.log.Warn("resharding on request", "err", err)
	}
}

func (r *runner) onRevoked() {
	r.lead.BumpGen()
	for _, c := range r.lead.DropAll() {
		c()
	}
}

// watchServers keeps the leader watching the server list and every
// server's flags; any change that alters the set of servers able to take
// items flags a reshard.
func (r *runner) watchServers(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	r.lead.ArmOnce(leader.ServersWatch, func() func() {
		return r.rc.Watch(r.paths.Servers(), regcenter.WatchChildren, func(regcenter.Event) {
			r.kick.membership.Kick()
		})
	})
	r.kick.membership.Kick()
}

// checkMembership runs on the leader after a server-related change.
func (r *runner) checkMembership() {
	if !r.elect.IsLeader() {
		return
	}
	sess := r.rc.Session()
	ctx, cancel := context.WithTimeout(sess.Ctx(), r.s.opts.reshardTimeout)
	defer cancel()
	servers, err := reshard.ReadServers(ctx, r.rc, r.paths)
	if err != nil {
		r.log.Warn("reading servers", "err", err)
		return
	}
	last, leading := r.lead.WatchServers(r.elect.IsLeader, servers, func(sv string) func() {
		return r.rc.Watch(r.paths.Server(sv), regcenter.WatchChildren, func(regcenter.Event) {
			r.kick.membership.Kick()
		})
	})
	if !leading {
		return
	}
	excluded, err := placement.ReadExcluded(ctx, r.rc)
	if err != nil {
		r.log.Warn("reading the drain list", "err", err)
		return
	}
	online := excluded.Eligible(servers.Online())
	if last == nil || !slices.Equal(last, online) {
		stands, err := reshard.Stands(ctx, r.rc, r.paths, last, online)
		switch {
		case err != nil:
			r.log.Warn("reading the departed servers' assignments; resharding", "err", err)
			r.setNecessary(ctx)
		case stands:
			// Only servers that held nothing of this job left: its
			// assignment stands for the servers that remain, and its
			// instances keep firing on it without a reshard.
			r.lead.SetSharded(online)
		default:
			r.setNecessary(ctx)
		}
	}
	if r.config().Failover {
		if err := r.queueDeparted(ctx, servers); err != nil {
			r.log.Warn("queueing a departed instance's items for failover", "err", err)
		}
		// Queueing cleared the departed instances' assignments: the load
		// table says so now, not at the job's next fire.
		if err := r.repairBooksWhileLive(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("repairing the load table's books", "err", err)
		}
	}
}
