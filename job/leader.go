package job

import (
	"context"
	"slices"
	"strings"
	"sync"

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
	r.lead.bumpGen()
	r.s.emit(Event{Kind: EventLeader, Job: r.name})
	r.lead.setSharded(nil)
	r.goFunc(func() {
		r.setNecessary(ctx)
		r.watchServers(ctx)
		if r.lead.has(requestWatch) || ctx.Err() != nil {
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
		if !r.lead.keep(requestWatch, cancel, r.elect.IsLeader) {
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
	r.lead.bumpGen()
	for _, c := range r.lead.dropAll() {
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
	r.lead.armOnce(serversWatch, func() func() {
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
	last, leading := r.lead.watchServers(r.elect.IsLeader, servers, func(sv string) func() {
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
			r.lead.setSharded(online)
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

// Keys of leaderDuties.watches other than a server's name.
const (
	serversWatch = ""           // the server list
	requestWatch = "/necessary" // reshard requests
)

// leaderDuties is what this instance keeps for its leader's duties: the
// watches they arm (the server list, each server's flags, reshard
// requests), the servers it last resharded onto, and a generation that
// changes when leadership does. It owns its lock, taken only in this file;
// sem, held while this instance reshards or repairs the books, is a
// channel and needs none.
type leaderDuties struct {
	mu          sync.Mutex
	watches     map[string]func() // cancels, by server name or a key above
	gen         chan struct{}     // closed and replaced when leadership changes
	lastSharded []string          // the eligible servers of the last reshard here
	sem         chan struct{}
}

func newLeaderDuties() *leaderDuties {
	return &leaderDuties{watches: map[string]func(){}, gen: make(chan struct{}), sem: make(chan struct{}, 1)}
}

// bumpGen marks a change of leadership: changed's channel is closed.
func (d *leaderDuties) bumpGen() {
	d.mu.Lock()
	close(d.gen)
	d.gen = make(chan struct{})
	d.mu.Unlock()
}

// changed returns a channel closed at the next change of leadership.
func (d *leaderDuties) changed() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.gen
}

// setSharded records the servers a reshard here placed items on (nil:
// none yet under this leadership).
func (d *leaderDuties) setSharded(servers []string) {
	d.mu.Lock()
	d.lastSharded = servers
	d.mu.Unlock()
}

// has reports whether the watch key is armed.
func (d *leaderDuties) has(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.watches[key]
	return ok
}

// keep records cancel as the watch key, unless one is armed already or
// leading reports false: then it returns false and the caller cancels.
func (d *leaderDuties) keep(key string, cancel func(), leading func() bool) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, dup := d.watches[key]; dup || !leading() {
		return false
	}
	d.watches[key] = cancel
	return true
}

// armOnce arms the watch key with arm unless it is armed.
func (d *leaderDuties) armOnce(key string, arm func() (cancel func())) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.watches[key]; !ok {
		d.watches[key] = arm()
	}
}

// dropAll forgets every watch and returns their cancels.
func (d *leaderDuties) dropAll() map[string]func() {
	d.mu.Lock()
	defer d.mu.Unlock()
	cancels := d.watches
	d.watches = map[string]func(){}
	return cancels
}

// watchServers, while leading reports true, arms a watch (with arm) on
// each of servers not yet watched and cancels those of servers gone. It
// returns the servers of the last reshard here, and false if this
// instance no longer leads.
func (d *leaderDuties) watchServers(leading func() bool, servers reshard.Servers, arm func(server string) (cancel func())) (lastSharded []string, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !leading() {
		return nil, false
	}
	for _, sv := range servers.Names() {
		if _, ok := d.watches[sv]; !ok {
			d.watches[sv] = arm(sv)
		}
	}
	for sv, c := range d.watches {
		if _, ok := servers[sv]; !ok && sv != serversWatch && !strings.HasPrefix(sv, "/") {
			c()
			delete(d.watches, sv)
		}
	}
	return d.lastSharded, true
}
