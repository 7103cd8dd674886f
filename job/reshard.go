package job

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/internal/parallel"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/placement"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/sharding"
)

// Resharding: an instance flags it (necessary), waits for it before a
// fire, and the leader computes and writes every instance's assignment in
// one transaction.

// requestReshard flags a reshard and asks the leader for it at once (the
// leader watches the flag's data).
func (r *runner) requestReshard(ctx context.Context) error {
	ops := r.paths.FlagReshardOps()
	ops[0] = regcenter.CreateOp{Path: r.paths.Necessary(), Data: []byte(r.serverID())}
	err := r.rc.Multi(ctx, ops...)
	if errors.Is(err, regcenter.ErrNodeExists) {
		_, err = r.rc.Set(ctx, r.paths.Necessary(), []byte(r.serverID()), -1)
	}
	if err != nil && !errors.Is(err, regcenter.ErrNoNode) {
		return fmt.Errorf("requesting a reshard: %w", err)
	}
	return nil
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
		case <-r.lead.changed():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// reshard is the leader's one-transaction reshard.
func (r *runner) reshard(ctx context.Context) error {
	// One reshard at a time (a fire's and a follower's request can meet);
	// the second finds the flag gone and has nothing to do.
	select {
	case r.lead.sem <- struct{}{}:
		// Uncontended: the caller has just seen the flag.
	default:
		select {
		case r.lead.sem <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		// Waited for another reshard: it may have done the work.
		if due, _, err := r.rc.Exists(ctx, r.paths.Necessary()); err != nil || !due {
			<-r.lead.sem
			return err
		}
	}
	defer func() { <-r.lead.sem }()
	fence, err := r.elect.Fence()
	if err != nil {
		return err
	}
	if _, err := r.rc.Create(ctx, r.paths.Processing(), []byte(r.serverID()), regcenter.Ephemeral); err != nil && !errors.Is(err, regcenter.ErrNodeExists) {
		return fmt.Errorf("flag processing: %w", err)
	}
	servers, err := r.readServers(ctx)
	if err != nil {
		r.dropProcessing(ctx)
		return err
	}
	fakes, err := r.fakeStatuses(ctx, servers)
	if err != nil {
		r.dropProcessing(ctx)
		return err
	}
	cfg := r.config()
	online := servers.online()
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
	r.lead.setSharded(eligible)
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
func (r *runner) placeRequest(ctx context.Context, cfg *spec, servers serverSet, online []string, fence regcenter.Op, fakes []string) (*placement.Request, error) {
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
	read, err := r.readAssignment(ctx, servers)
	if err != nil {
		return nil, err
	}
	req.Current, req.Unplaced = read.current, read.unplaced
	versions, unplacedVersion := read.versions, read.unplacedVersion
	hadUnplaced := unplacedVersion >= 0
	req.Ops = func(assign map[string][]int, unplaced []int) []regcenter.Op {
		ops := []regcenter.Op{fence}
		for _, p := range fakes {
			ops = append(ops, regcenter.DeleteOp{Path: p, Version: -1})
		}
		for _, sv := range servers.names() {
			kids := servers[sv]
			shardPath := r.paths.Flag(sv, layout.Sharding)
			if items, ok := assign[sv]; ok {
				data := []byte(layout.FormatItems(items))
				if kids[layout.Sharding] {
					ops = append(ops, regcenter.SetOp{Path: shardPath, Data: data, Version: versions[sv]})
				} else {
					ops = append(ops, regcenter.CreateOp{Path: shardPath, Data: data})
				}
				continue
			}
			// Offline, disabled, draining. An offline server with nothing
			// but its assignment is removed, so that entries of instances
			// that are gone for good do not pile up.
			onlyAssignment := len(kids) == 0 || (len(kids) == 1 && kids[layout.Sharding])
			switch {
			case !kids[layout.Status] && onlyAssignment:
				if kids[layout.Sharding] {
					ops = append(ops, regcenter.DeleteOp{Path: shardPath, Version: versions[sv]})
				}
				ops = append(ops, regcenter.DeleteOp{Path: r.paths.Server(sv), Version: -1})
			case kids[layout.Sharding]:
				ops = append(ops, regcenter.SetOp{Path: shardPath, Data: nil, Version: versions[sv]})
			}
		}
		switch data := []byte(layout.FormatItems(unplaced)); {
		case len(unplaced) > 0 && hadUnplaced:
			ops = append(ops, regcenter.SetOp{Path: r.paths.Unplaced(), Data: data, Version: unplacedVersion})
		case len(unplaced) > 0:
			ops = append(ops, regcenter.CreateOp{Path: r.paths.Unplaced(), Data: data})
		case hadUnplaced:
			ops = append(ops, regcenter.DeleteOp{Path: r.paths.Unplaced(), Version: unplacedVersion})
		}
		return append(ops,
			regcenter.DeleteOp{Path: r.paths.Necessary(), Version: -1},
			regcenter.DeleteOp{Path: r.paths.Processing(), Version: -1})
	}
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
	data := stored.Misfire{Since: since.UnixMilli()}.Marshal()
	errs := make([]error, len(items))
	parallel.Each(len(items), reshardReads, func(i int) {
		_, errs[i] = r.rc.Create(ctx, r.paths.ItemNode(items[i], layout.Misfire), data, regcenter.Persistent)
		if errors.Is(errs[i], regcenter.ErrNodeExists) {
			errs[i] = nil
		}
	})
	if err := errors.Join(errs...); err != nil {
		r.log.Warn("recording the fires unplaced items miss; the next reshard records them again", "err", err)
	}
	return since
}

// assignmentRead is a job's assignment as its nodes say, with the
// versions read.
type assignmentRead struct {
	current         map[string][]int // by server with a sharding node
	versions        map[string]int32
	unplaced        []int
	unplacedVersion int32 // -1: no unplaced node
}

// readAssignment reads the sharding node of every server of servers that
// has one, and the unplaced node. A server whose node went since servers
// was read loses its layout.Sharding mark in servers.
func (r *runner) readAssignment(ctx context.Context, servers serverSet) (assignmentRead, error) {
	return readAssignment(ctx, r.rc, r.paths, servers)
}

func readAssignment(ctx context.Context, rc regcenter.Center, paths layout.Job, servers serverSet) (assignmentRead, error) {
	out := assignmentRead{current: map[string][]int{}, versions: map[string]int32{}}
	var withNode []string
	for _, sv := range servers.names() {
		if servers[sv][layout.Sharding] {
			withNode = append(withNode, sv)
		}
	}
	read := make([][]int, len(withNode))
	readV := make([]int32, len(withNode))
	errs := make([]error, len(withNode))
	parallel.Each(len(withNode), reshardReads, func(i int) {
		read[i], readV[i], errs[i] = placement.ReadItemsVersion(ctx, rc, paths.Flag(withNode[i], layout.Sharding))
	})
	for i, sv := range withNode {
		items, v, err := read[i], readV[i], errs[i]
		if err != nil {
			return assignmentRead{}, err
		}
		if v < 0 {
			// Gone since the server's children were read: the server
			// has no assignment node to write over.
			delete(servers[sv], layout.Sharding)
			continue
		}
		out.current[sv], out.versions[sv] = items, v
	}
	var err error
	out.unplaced, out.unplacedVersion, err = placement.ReadItemsVersion(ctx, rc, paths.Unplaced())
	if err != nil {
		return assignmentRead{}, err
	}
	return out, nil
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
	select {
	case r.lead.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-r.lead.sem }()
	req, err := repairRequest(ctx, r.rc, r.name)
	if err != nil {
		return err
	}
	if err := r.s.placer.Place(ctx, req); err != nil {
		return fmt.Errorf("repairing the load table's books: %w", err)
	}
	return nil
}

// repairRequest reads job's assignment nodes and what fences a repair of
// its entry on them (see repairBooks).
func repairRequest(ctx context.Context, rc regcenter.Center, job string) (*placement.Request, error) {
	paths := layout.Job(job)
	_, epoch, err := rc.Get(ctx, paths.ShardingEpoch())
	if err != nil {
		return nil, err
	}
	flagged, flag, err := rc.Exists(ctx, paths.Necessary())
	if err != nil {
		return nil, err
	}
	servers, err := readServers(ctx, rc, paths)
	if err != nil {
		return nil, err
	}
	read, err := readAssignment(ctx, rc, paths, servers)
	if err != nil {
		return nil, err
	}
	fence := []regcenter.Op{regcenter.CheckOp{Path: paths.ShardingEpoch(), Version: epoch.Version}}
	if flagged {
		fence = append(fence, regcenter.CheckOp{Path: paths.Necessary(), Version: flag.Version})
	}
	for _, sv := range slices.Sorted(maps.Keys(read.versions)) {
		fence = append(fence, regcenter.CheckOp{Path: paths.Flag(sv, layout.Sharding), Version: read.versions[sv]})
	}
	if read.unplacedVersion >= 0 {
		fence = append(fence, regcenter.CheckOp{Path: paths.Unplaced(), Version: read.unplacedVersion})
	}
	return &placement.Request{Job: job, Repair: true, Current: read.current, Unplaced: read.unplaced,
		Ops: func(map[string][]int, []int) []regcenter.Op { return fence }}, nil
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

// fakeStatuses finds status nodes that no instance holds — persistent ones:
// an instance's status is always ephemeral — marks their servers offline in
// servers, and returns their paths for the reshard to delete. Left alone,
// such a node makes a server look online forever and its items never run.
func (r *runner) fakeStatuses(ctx context.Context, servers serverSet) ([]string, error) {
	var fakes, withStatus []string
	for _, sv := range servers.names() {
		if servers[sv][layout.Status] {
			withStatus = append(withStatus, sv)
		}
	}
	found := make([]bool, len(withStatus))
	stats := make([]regcenter.Stat, len(withStatus))
	errs := make([]error, len(withStatus))
	parallel.Each(len(withStatus), reshardReads, func(i int) {
		found[i], stats[i], errs[i] = r.rc.Exists(ctx, r.paths.Flag(withStatus[i], layout.Status))
	})
	for i, sv := range withStatus {
		p := r.paths.Flag(sv, layout.Status)
		ok, st, err := found[i], stats[i], errs[i]
		if err != nil {
			return nil, err
		}
		if ok && st.EphemeralOwner == 0 {
			r.log.Warn("persistent status node: not an instance's; the server is treated as offline and the node removed", "server", sv, "node", p)
			delete(servers[sv], layout.Status)
			fakes = append(fakes, p)
		}
	}
	return fakes, nil
}

func (r *runner) dropProcessing(ctx context.Context) {
	if err := r.rc.Delete(ctx, r.paths.Processing(), -1); err != nil && !errors.Is(err, regcenter.ErrNoNode) {
		r.log.Warn("removing processing flag", "err", err)
	}
}

// serverSet maps each server id to the set of its child nodes.
type serverSet map[string]map[string]bool

func (s serverSet) names() []string {
	out := make([]string, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// online lists servers with a live status and no disabled flag, sorted.
func (s serverSet) online() []string {
	var out []string
	for _, sv := range s.names() {
		if kids := s[sv]; kids[layout.Status] && !kids[layout.Disabled] {
			out = append(out, sv)
		}
	}
	return out
}

func (r *runner) readServers(ctx context.Context) (serverSet, error) {
	return readServers(ctx, r.rc, r.paths)
}

// readServers reads a job's servers and the children of each.
func readServers(ctx context.Context, rc regcenter.Center, paths layout.Job) (serverSet, error) {
	names, err := rc.Children(ctx, paths.Servers())
	if errors.Is(err, regcenter.ErrNoNode) {
		return serverSet{}, nil
	}
	if err != nil {
		return nil, err
	}
	// The reads go out together (pipelined on the one connection): with
	// a hundred servers, one at a time was most of a reshard.
	kids := make([][]string, len(names))
	errs := make([]error, len(names))
	parallel.Each(len(names), reshardReads, func(i int) {
		kids[i], errs[i] = rc.Children(ctx, paths.Server(names[i]))
	})
	out := serverSet{}
	for i, sv := range names {
		if errors.Is(errs[i], regcenter.ErrNoNode) {
			continue
		}
		if errs[i] != nil {
			return nil, errs[i]
		}
		set := map[string]bool{}
		for _, k := range kids[i] {
			set[k] = true
		}
		out[sv] = set
	}
	return out, nil
}

// reshardReads bounds the reads a reshard has in flight at once.
const reshardReads = 64
