package job

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/placement"
	"github.com/shardjob/shardjob/job/internal/reshard"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/sharding"
)

// Resharding: an instance flags it (necessary), waits for it before a
// fire, and the leader computes and writes every instance's assignment in
// one transaction.

// requestReshard flags a reshard and asks the leader for it at once (the
// leader watches the flag's data).
func (r *runner) requestReshard(ctx context.Context) error {
	return reshard.Request(ctx, r.rc, r.paths, r.serverID())
}

// coordCtx bounds ZooKeeper coordination for a fire: the reshard timeout,
// the session, and the runner's life (stop ends waits at once).
func (r *runner) coordCtx(sess *regcenter.Session) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.coordParent(sess), r.s.opts.reshardTimeout)
}

// coordParent returns the parent of the coordination under sess: cancelled
// when sess ends or stop begins. There is one per session, made by its
// first use, as runContext's: linking each call to both and unlinking it
// again cost a fire more than the call's own timeout.
func (r *runner) coordParent(sess *regcenter.Session) context.Context {
	return r.ctx.coord.Of(sess, r.ctx.life)
}

// awaitSharding returns once no reshard is due: the leader reshards, the
// others wait on a watch (never a polling loop) until ctx ends.
func (r *runner) awaitSharding(ctx context.Context) error {
	var changed chan struct{}
	var cancelWatch func()
	defer func() {
		if cancelWatch != nil {
			cancelWatch()
		}
	}()
	for {
		due, _, err := r.rc.Exists(ctx, r.paths.Necessary())
		if err != nil {
			return err
		}
		if !due {
			return nil
		}
		if r.elect.IsLeader() {
			err := r.reshard(ctx)
			if err == nil {
				continue
			}
			r.log.Warn("resharding failed", "err", err)
		}
		if cancelWatch == nil {
			// Only now pay for a watch: steady state needs none.
			changed = make(chan struct{}, 1)
			poke := func(regcenter.Event) {
				select {
				case changed <- struct{}{}:
				default:
				}
			}
			c1 := r.rc.Watch(r.paths.Necessary(), regcenter.WatchNode, poke)
			c2 := r.rc.Watch(r.paths.Processing(), regcenter.WatchNode, poke)
			cancelWatch = func() { c1(); c2() }
			if !r.elect.IsLeader() {
				// Ask the leader to reshard now: it may not fire soon (a
				// rare cron, a trigger here). Writing the flag's data is
				// the request; the leader watches it.
				if _, err := r.rc.Set(ctx, r.paths.Necessary(), []byte(r.serverID()), -1); err != nil && !errors.Is(err, regcenter.ErrNoNode) {
					r.log.Warn("asking the leader to reshard", "err", err)
				}
			}
			continue // re-check now that the watches are armed
		}
		select {
		case <-changed:
		case <-r.lead.Changed():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// reshard is the leader's one-transaction reshard.
func (r *runner) reshard(ctx context.Context) error {
	// One reshard at a time (a fire's and a follower's request can meet);
	// the second finds the flag gone and has nothing to do. Uncontended,
	// the turn is taken at once: the caller has just seen the flag.
	if !r.lead.TryAcquire() {
		if err := r.lead.Acquire(ctx); err != nil {
			return err
		}
		// Waited for another reshard: it may have done the work.
		if due, _, err := r.rc.Exists(ctx, r.paths.Necessary()); err != nil || !due {
			r.lead.Release()
			return err
		}
	}
	defer r.lead.Release()
	fence, err := r.elect.Fence()
	if err != nil {
		return err
	}
	if _, err := r.rc.Create(ctx, r.paths.Processing(), []byte(r.serverID()), regcenter.Ephemeral); err != nil && !errors.Is(err, regcenter.ErrNodeExists) {
		return fmt.Errorf("flag processing: %w", err)
	}
	servers, err := reshard.ReadServers(ctx, r.rc, r.paths)
	if err != nil {
		r.dropProcessing(ctx)
		return err
	}
	fakes, err := reshard.FakeStatuses(ctx, r.rc, r.paths, servers, r.log)
	if err != nil {
		r.dropProcessing(ctx)
		return err
	}
	cfg := r.config()
	online := servers.Online()
	// Departed instances' items are queued (and their assignments
	// cleared) before the assignment is read, so that the reshard writes
	// over what the queueing left and its entry in the load table says
	// the same: read first, the clears made its commit fail, and nothing
	// told the table until the next reshard.
	if cfg.Failover {
		if err := r.queueDeparted(ctx, servers); err != nil {
			r.log.Warn("queueing a departed instance's items for failover", "err", err)
		}
	}
	req, err := r.placeRequest(ctx, cfg, servers, online, fence, fakes)
	if err != nil {
		r.dropProcessing(ctx)
		return err
	}
	if err := r.s.placer.Place(ctx, req); err != nil {
		r.counters.reshardErrors.Add(1)
		r.dropProcessing(ctx)
		return err
	}
	r.counters.reshards.Add(1)
	r.counters.unplaced.Store(int64(len(req.UnplacedOut)))
	eligible := make([]string, 0, len(req.Assign))
	for sv := range req.Assign {
		eligible = append(eligible, sv)
	}
	slices.Sort(eligible)
	r.lead.SetSharded(eligible)
	if len(req.UnplacedOut) > 0 {
		owed := r.oweUnplaced(ctx, cfg, req.UnplacedOut)
		r.log.Warn("items unplaced: no server may take them (caps); they are placed when capacity appears, and the fires they miss are made up once then",
			"unplaced", len(req.UnplacedOut), "items", cfg.ShardingTotalCount, "owed since", owed)
		r.s.emit(Event{Kind: EventUnplaced, Job: r.name, Units: len(req.UnplacedOut)})
	}
	r.log.Info("resharded", "servers", online, "items", cfg.ShardingTotalCount, "strategy", cfg.ShardingStrategy)
	return nil
}

// placeRequest reads what the placer needs of this job (its assignment
// now, its unplaced items) and builds its part of the transaction.
func (r *runner) placeRequest(ctx context.Context, cfg *spec, servers reshard.Servers, online []string, fence regcenter.Op, fakes []string) (*placement.Request, error) {
	req := &placement.Request{
		Job: r.name, Total: cfg.ShardingTotalCount, Strategy: cfg.ShardingStrategy,
		Servers: online, Current: map[string][]int{},
	}
	if req.Strategy == "" {
		req.Strategy = DefaultShardingStrategy
	}
	if req.Strategy != sharding.Balanced && req.Strategy != sharding.Idlest {
		strategy, err := cfg.Strategy()
		if err != nil {
			return nil, err
		}
		req.Named = strategy
	}
	read, err := reshard.ReadAssignment(ctx, r.rc, r.paths, servers)
	if err != nil {
		return nil, err
	}
	req.Current, req.Unplaced = read.Current, read.Unplaced
	req.Ops = reshard.Ops(r.paths, servers, read, fence, fakes)
	return req, nil
}

// oweUnplaced records, for each unplaced item, the first fire it misses as
// a debt in its misfire node: whoever is given the item later reads the
// debt when it inherits the item (inheritedGaps) and makes the missed
// fires up in one run. An item that has a debt already keeps the earlier
// one. Every reshard that leaves items unplaced writes the debts again, so
// a leader that died between its reshard and these writes loses none. It
// returns the fire the debts start at (zero: none written).
func (r *runner) oweUnplaced(ctx context.Context, cfg *spec, items []int) time.Time {
	if cfg.Unmonitored || cfg.skipsMissed() {
		return time.Time{}
	}
	sched, _, err := cfg.Schedule()
	if err != nil {
		return time.Time{}
	}
	// The fire this reshard comes before (dispatched now, within the
	// lead), else the next one: the first the items miss. An earlier
	// fire they did run is not run again: a make-up run skips the fires
	// the item's record lists.
	now := r.s.opts.now()
	since := fireplan.Due(sched, now, r.s.opts.fireLead)
	if since.IsZero() || since.Before(now.Add(-r.s.opts.fireLead)) {
		since = sched.Next(now)
	}
	if since.IsZero() {
		return time.Time{}
	}
	if err := reshard.OweMisfires(ctx, r.rc, r.paths, items, since); err != nil {
		r.log.Warn("recording the fires unplaced items miss; the next reshard records them again", "err", err)
	}
	return since
}

// repairBooks makes this job's entry in the namespace's load table what
// its assignment nodes say, after something other than a reshard changed
// them: an instance that left cleared its own (it repairs after its leave),
// the leader cleared a departed one's when it queued its items for
// failover; and at every reconcile pass. When the table already says the
// same, nothing is written.
//
// Any instance may repair, leader or not: the write is fenced by what it
// read. Every change to the nodes either sets a node that existed (checked
// at the version read) or is a reshard, which needs a reshard flag: one
// raised after the read moved the epoch (checked), and one already raised
// is deleted by the reshard (its node is checked at the version read).
func (r *runner) repairBooks(ctx context.Context) error {
	if err := r.lead.Acquire(ctx); err != nil {
		return err
	}
	defer r.lead.Release()
	req, err := reshard.RepairRequest(ctx, r.rc, r.name)
	if err != nil {
		return err
	}
	if err := r.s.placer.Place(ctx, req); err != nil {
		return fmt.Errorf("repairing the load table's books: %w", err)
	}
	return nil
}

// repairBooksWhileLive is repairBooks for the leader's and the reconcile
// loop's passes, which a stop ends: the next leader repairs.
func (r *runner) repairBooksWhileLive(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(r.ctx.life, cancel)()
	if err := r.repairBooks(ctx); err != nil && r.ctx.life.Err() == nil {
		return err
	}
	return nil
}

func (r *runner) dropProcessing(ctx context.Context) {
	if err := r.rc.Delete(ctx, r.paths.Processing(), -1); err != nil && !errors.Is(err, regcenter.ErrNoNode) {
		r.log.Warn("removing processing flag", "err", err)
	}
}
