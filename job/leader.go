package job

import (
	"context"
	"strings"

	"github.com/shardjob/shardjob/regcenter"
)

// The leader's duties beyond resharding: watching which servers are online
// and able to take items, and flagging a reshard when that changes.

// onElected takes up the leader's duties: it flags a reshard (the previous
// leader may have died in the middle of one), watches the servers, and
// reshards at once when an instance about to fire asks for it.
func (r *runner) onElected(ctx context.Context) {
	r.bumpLeaderGen()
	r.s.emit(Event{Kind: EventLeader, Job: r.name})
	r.mu.Lock()
	r.lastSharded = nil
	r.mu.Unlock()
	r.goFunc(func() {
		r.setNecessary(ctx)
		r.watchServers(ctx)
		r.mu.Lock()
		_, armed := r.leaderWatches["/necessary"]
		r.mu.Unlock()
		if armed || ctx.Err() != nil {
			return
		}
		// An instance about to fire asks for a reshard by writing the
		// flag's data: reshard at once rather than at our next fire.
		_, cancel, err := r.rc.WatchNow(ctx, r.paths.Necessary(), regcenter.WatchNode, func(ev regcenter.Event) {
			switch ev.Type {
			case regcenter.EventDataChanged, regcenter.EventResync:
				r.reshardKick.kick()
			case regcenter.EventCreated:
				r.epochKick.kick() // a flag set by hand moves no epoch
			}
		})
		r.mu.Lock()
		if _, dup := r.leaderWatches["/necessary"]; dup || !r.elect.IsLeader() {
			r.mu.Unlock()
			cancel()
			return
		}
		r.leaderWatches["/necessary"] = cancel
		r.mu.Unlock()
		// A request written before the watch was armed (an instance
		// draining, or about to fire, while nobody led) is answered now:
		// the flag's data names who asked; the leader's own flag has none.
		if err == nil {
			if data, _, err := r.rc.Get(ctx, r.paths.Necessary()); err == nil && len(data) > 0 {
				r.reshardKick.kick()
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
	r.bumpLeaderGen()
	r.mu.Lock()
	cancels := r.leaderWatches
	r.leaderWatches = map[string]func(){}
	r.mu.Unlock()
	for _, c := range cancels {
		c()
	}
}

func (r *runner) bumpLeaderGen() {
	r.mu.Lock()
	close(r.leaderGen)
	r.leaderGen = make(chan struct{})
	r.mu.Unlock()
}

// watchServers keeps the leader watching the server list and every
// server's flags; any change that alters the set of servers able to take
// items flags a reshard.
func (r *runner) watchServers(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	r.mu.Lock()
	if _, ok := r.leaderWatches[""]; !ok {
		r.leaderWatches[""] = r.rc.Watch(r.paths.Servers(), regcenter.WatchChildren, func(regcenter.Event) {
			r.membership.kick()
		})
	}
	r.mu.Unlock()
	r.membership.kick()
}

// checkMembership runs on the leader after a server-related change.
func (r *runner) checkMembership() {
	if !r.elect.IsLeader() {
		return
	}
	sess := r.rc.Session()
	ctx, cancel := context.WithTimeout(sess.Ctx(), r.s.opts.reshardTimeout)
	defer cancel()
	servers, err := r.readServers(ctx)
	if err != nil {
		r.log.Warn("reading servers", "err", err)
		return
	}
	r.mu.Lock()
	if !r.elect.IsLeader() {
		r.mu.Unlock()
		return
	}
	for _, sv := range servers.names() {
		if _, ok := r.leaderWatches[sv]; !ok {
			r.leaderWatches[sv] = r.rc.Watch(r.paths.Server(sv), regcenter.WatchChildren, func(regcenter.Event) {
				r.membership.kick()
			})
		}
	}
	for sv, c := range r.leaderWatches {
		if _, ok := servers[sv]; !ok && sv != "" && !strings.HasPrefix(sv, "/") {
			c()
			delete(r.leaderWatches, sv)
		}
	}
	last := r.lastSharded
	r.mu.Unlock()
	excluded, err := readExcluded(ctx, r.rc)
	if err != nil {
		r.log.Warn("reading the drain list", "err", err)
		return
	}
	online := excluded.eligible(servers.online())
	if last == nil || !equalStrings(last, online) {
		r.setNecessary(ctx)
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
