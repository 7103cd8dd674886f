package leader

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/placement"
	"github.com/shardjob/shardjob/job/internal/reshard"
	"github.com/shardjob/shardjob/regcenter"
)

// Office runs the leader's duties beyond resharding itself: the watches
// taken up when elected (the reshard requests, the servers and their
// flags), dropped when revoked, and the check of the servers able to take
// items after any change of them. What it needs of the runner is handed to
// it when it is made; it keeps its state in Duties.
type Office struct {
	Duties *Duties
	RC     regcenter.Center
	Paths  layout.Job
	Log    *slog.Logger
	// Leading reports whether this instance leads the job.
	Leading func() bool
	// Go runs f on a goroutine of the runner, false once it stops.
	Go func(f func()) bool
	// The runner's kickers: the membership check (CheckMembership), the
	// answer to a reshard request, the note of a moved reshard epoch.
	KickMembership, KickReshard, KickEpoch func()
	// Soon reports whether the job fires soon: a reshard flag is then
	// answered at once, not at the fire (a join, a leave, a new leader's
	// own flag), so that the fire finds its assignment made rather than
	// waits for it. nil: never.
	Soon func() bool
	// What a membership check does with failover on (Membership):
	// Failover reports whether it is on (the job's config now);
	// QueueDeparted queues the items of servers that left
	// (failover.Departures); Repair repairs the load table's books
	// (reshard.Resharder.RepairWhileLive).
	Failover      func() bool
	QueueDeparted func(ctx context.Context, servers reshard.Servers) error
	Repair        func(ctx context.Context) error
	// Fault says why the job's stored assignment is not right for the
	// servers online among servers, "" when it is
	// (reconcile.Assignment.FaultWith): a new leader keeps an assignment
	// that holds (Inherit). nil: a new leader always flags a reshard.
	Fault func(ctx context.Context, servers reshard.Servers) (string, error)
}

// Elected takes up the leader's duties, once Duties' generation moved:
// it forgets the last reshard's servers and, on a goroutine of the
// runner, watches the servers (the first membership check, which finds
// nothing known of the last reshard, keeps the assignment it inherits if
// it holds or flags a reshard: Inherit), and arms the watch on reshard
// requests, so as to reshard at once when an instance about to fire asks
// for it, or when a flag is set and the job fires soon.
func (o *Office) Elected(ctx context.Context) {
	o.Duties.SetSharded(nil)
	o.Go(func() {
		if o.Fault == nil {
			o.FlagReshard(ctx)
		}
		o.watchServers(ctx)
		if o.Duties.Has(RequestWatch) || ctx.Err() != nil {
			return
		}
		// An instance about to fire asks for a reshard by writing the
		// flag's data: reshard at once rather than at our next fire.
		_, cancel, err := o.RC.WatchNow(ctx, o.Paths.Necessary(), regcenter.WatchNode, func(ev regcenter.Event) {
			switch ev.Type {
			case regcenter.EventDataChanged, regcenter.EventResync:
				o.KickReshard()
			case regcenter.EventCreated:
				o.KickEpoch() // a flag set by hand moves no epoch
				if o.soon() {
					o.KickReshard()
				}
			}
		})
		if !o.Duties.Keep(RequestWatch, cancel, o.Leading) {
			cancel()
			return
		}
		// A request written before the watch was armed (an instance
		// draining, or about to fire, while nobody led) is answered now:
		// the flag's data names who asked; the leader's own flag has none,
		// and is answered now only when the job fires soon.
		if err == nil {
			if data, _, err := o.RC.Get(ctx, o.Paths.Necessary()); err == nil && (len(data) > 0 || o.soon()) {
				o.KickReshard()
			}
		}
	})
}

func (o *Office) soon() bool { return o.Soon != nil && o.Soon() }

// Inherit is a new leader's first look at the job's assignment, made by
// its first membership check with the servers it read and those of them
// eligible to take items (online). When the assignment holds for them
// (Fault finds none, and no status node among them is a fake one, which a
// reshard deletes), it is kept: online counts as the last reshard's
// servers, and the next check compares with it. Otherwise, or when it
// cannot tell, it flags a reshard. A leader's death thus disturbs only
// the jobs whose items it held: a flag moves the epoch every instance's
// fire proves, so each of the others' next fire waited for a reshard that
// changed nothing — at hundreds of jobs, the survivors' own fires late
// behind the take-over. A reshard the previous leader left half done is
// one transaction never committed: its flag is still up, and answered as
// any other. The caller holds the turn when it could take it.
func (o *Office) Inherit(ctx context.Context, servers reshard.Servers, online []string) {
	why, err := o.holds(ctx, servers)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			o.Log.Warn("reading the assignment a new leader inherits; resharding", "err", err)
		}
	case why != "":
		o.Log.Info("new leader: the assignment does not hold; resharding", "why", why)
	default:
		o.Duties.SetSharded(online)
		return
	}
	o.FlagReshard(ctx)
}

// holds says why the stored assignment does not hold for servers, ""
// when it does (Inherit).
func (o *Office) holds(ctx context.Context, servers reshard.Servers) (string, error) {
	if o.Fault == nil {
		return "nothing known of the last reshard", nil
	}
	if why, err := o.Fault(ctx, servers); err != nil || why != "" {
		return why, err
	}
	// FakeStatuses marks the servers it finds offline: a copy.
	mine := make(reshard.Servers, len(servers))
	for sv, kids := range servers {
		mine[sv] = maps.Clone(kids)
	}
	fakes, err := reshard.FakeStatuses(ctx, o.RC, o.Paths, mine, o.Log)
	if err != nil {
		return "", err
	}
	if len(fakes) > 0 {
		return "a status node no instance holds", nil
	}
	return "", nil
}

// Revoked drops the leader's duties: the generation moves and every watch
// they armed is cancelled.
func (o *Office) Revoked() {
	o.Duties.BumpGen()
	for _, c := range o.Duties.DropAll() {
		c()
	}
}

// FlagReshard flags a reshard (FlagReshard).
func (o *Office) FlagReshard(ctx context.Context) { FlagReshard(ctx, o.RC, o.Paths, o.Log) }

// FlagReshard flags a reshard of the job at paths, and logs a failure to
// log. It never creates parent nodes: after the job was removed from the
// cluster a late flag must not bring its tree back (registration creates
// the parents). It needs no Office: any instance flags, leader or not.
func FlagReshard(ctx context.Context, rc regcenter.Center, paths layout.Job, log *slog.Logger) {
	if err := placement.FlagReshard(ctx, rc, paths); err != nil && ctx.Err() == nil {
		log.Warn("cannot flag resharding", "err", err)
	}
}

// watchServers keeps the leader watching the server list and every
// server's flags; any change that alters the set of servers able to take
// items flags a reshard.
func (o *Office) watchServers(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	o.Duties.ArmOnce(ServersWatch, func() func() {
		return o.RC.Watch(o.Paths.Servers(), regcenter.WatchChildren, func(regcenter.Event) {
			o.KickMembership()
		})
	})
	o.KickMembership()
}

// CheckMembership runs on the leader after a server-related change: it
// reads the servers, watches each one's flags, and flags a reshard when
// the servers able to take items are not those of the last reshard here,
// unless only servers that held nothing of the job left; with nothing
// known of the last reshard (a new leader's first check), when the
// assignment inherited does not hold (Inherit). It returns the
// servers read, for the failover of those that left, and false when this
// instance does not lead or could not read them.
func (o *Office) CheckMembership(ctx context.Context) (reshard.Servers, bool) {
	if !o.Leading() {
		return nil, false
	}
	// The servers are read and compared with those of the last reshard
	// here while no reshard runs here: one in flight may have read them
	// before the change this check is for (it then leaves the newcomer
	// out, and the check flags the next) or after it (it places the
	// newcomer, and a flag raised as it commits would only reshard the
	// same servers again, a storm's worth of reshards for a fleet that
	// starts at once).
	// The turn is waited for half the time the check has at most: a
	// reshard stuck in a registry outage must not cost the check itself,
	// which then compares with the reshard before, as it could always.
	if o.acquireWithin(ctx) {
		defer o.Duties.Release()
	}
	servers, err := reshard.ReadServers(ctx, o.RC, o.Paths)
	if err != nil {
		o.Log.Warn("reading servers", "err", err)
		return nil, false
	}
	last, leading := o.Duties.WatchServers(o.Leading, servers, func(sv string) func() {
		return o.RC.Watch(o.Paths.Server(sv), regcenter.WatchChildren, func(regcenter.Event) {
			o.KickMembership()
		})
	})
	if !leading {
		return nil, false
	}
	excluded, err := placement.ReadExcluded(ctx, o.RC)
	if err != nil {
		o.Log.Warn("reading the drain list", "err", err)
		return nil, false
	}
	online := excluded.Eligible(servers.Online())
	if last == nil {
		o.Inherit(ctx, servers, online)
		return servers, true
	}
	if !slices.Equal(last, online) {
		stands, err := reshard.Stands(ctx, o.RC, o.Paths, last, online)
		switch {
		case err != nil:
			o.Log.Warn("reading the departed servers' assignments; resharding", "err", err)
			o.FlagReshard(ctx)
		case stands:
			// Only servers that held nothing of this job left: its
			// assignment stands for the servers that remain, and its
			// instances keep firing on it without a reshard.
			o.Duties.SetSharded(online)
		default:
			o.FlagReshard(ctx)
		}
	}
	return servers, true
}

// acquireWithin takes the duties' turn, waiting at most half the time ctx
// has left (a second without a deadline), and reports whether it took it.
func (o *Office) acquireWithin(ctx context.Context) bool {
	wait := time.Second
	if dl, ok := ctx.Deadline(); ok {
		wait = time.Until(dl) / 2
	}
	tctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := o.Duties.Acquire(tctx); err != nil {
		if ctx.Err() == nil {
			o.Log.Debug("membership check without waiting for the reshard in flight", "waited", wait)
		}
		return false
	}
	return true
}

// Membership is the membership check after a server-related change
// (CheckMembership); with failover on, the items of servers that left are
// queued, and the load table repaired at once.
func (o *Office) Membership(ctx context.Context) {
	servers, ok := o.CheckMembership(ctx)
	if !ok || !o.Failover() {
		return
	}
	if err := o.QueueDeparted(ctx, servers); err != nil {
		o.Log.Warn("queueing a departed instance's items for failover", "err", err)
	}
	// Queueing cleared the departed instances' assignments: the load
	// table says so now, not at the job's next fire.
	if err := o.Repair(ctx); err != nil && ctx.Err() == nil {
		o.Log.Warn("repairing the load table's books", "err", err)
	}
}
