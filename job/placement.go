package job

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/sharding"
)

// Namespace-wide placement. Every reshard, of any job, updates one load
// table (layout.Placement) in its own transaction, over the version it
// read: the table says how many units (items of any job) each server holds,
// so a job's reshard places its items knowing the whole namespace, and two
// reshards that read the same table cannot both commit. A scheduler's
// reshards go through one placer, which commits whatever is waiting in one
// pass: one read of the table, every job computed against it in turn, and
// as few transactions as the size limit allows (docs/design.md, "Placement
// across jobs", says why it is built this way).

// instanceInfo is the payload of an instance's node (layout.Instance).
type instanceInfo struct {
	// FaultTolerance is n of the cap N = 1 + K/max(S−n, 1).
	FaultTolerance int `json:"faultTolerance"`
	// AlarmThreshold is M: holding more units raises an alarm; 0 is off.
	AlarmThreshold int `json:"alarmThreshold,omitempty"`
	// Score is the load score, 0 (busy) to 100 (idle); absent until
	// sampled.
	Score *float64 `json:"score,omitempty"`
	// Slots and FreeSlots are the executor slots and those free.
	Slots     int `json:"slots,omitempty"`
	FreeSlots int `json:"freeSlots,omitempty"`
	// Draining and Drained report the instance's drain state: on the
	// drain list, and also holding nothing and running nothing.
	Draining bool `json:"draining,omitempty"`
	Drained  bool `json:"drained,omitempty"`
	// HealthURL is the instance's health endpoint, probed by its peers.
	HealthURL string `json:"healthURL,omitempty"`
	// Holder is the process holding the server id.
	Holder holder `json:"holder,omitzero"`
}

// nsView is what placement needs of the namespace besides the table.
type nsView struct {
	instances map[string]instanceInfo
	excluded  exclusions
}

// live lists the instances that may take units, sorted.
func (v nsView) live() []string {
	var out []string
	for s := range v.instances {
		if !v.excluded.has(s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// exclusions are the servers that may take no units: on the drain list,
// or marked offline.
type exclusions struct {
	draining, offline map[string]bool
}

func (e exclusions) has(server string) bool { return e.draining[server] || e.offline[server] }

// readExcluded reads the drain list and the offline marks.
func readExcluded(ctx context.Context, rc regcenter.Center) (exclusions, error) {
	e := exclusions{draining: map[string]bool{}, offline: map[string]bool{}}
	for path, set := range map[string]map[string]bool{layout.DrainList: e.draining, layout.Offline: e.offline} {
		kids, err := rc.Children(ctx, path)
		if errors.Is(err, regcenter.ErrNoNode) {
			continue
		}
		if err != nil {
			return exclusions{}, fmt.Errorf("reading %s: %w", path, err)
		}
		for _, k := range kids {
			set[k] = true
		}
	}
	return e, nil
}

// eligible lists the servers of online that may take units, in order.
func (e exclusions) eligible(online []string) []string {
	var out []string
	for _, s := range online {
		if !e.has(s) {
			out = append(out, s)
		}
	}
	return out
}

// readView reads the live instances and the exclusions.
func readView(ctx context.Context, rc regcenter.Center, log *slog.Logger) (nsView, error) {
	excluded, err := readExcluded(ctx, rc)
	if err != nil {
		return nsView{}, err
	}
	v := nsView{instances: map[string]instanceInfo{}, excluded: excluded}
	kids, err := rc.Children(ctx, layout.Instances)
	if errors.Is(err, regcenter.ErrNoNode) {
		return v, nil
	}
	if err != nil {
		return nsView{}, fmt.Errorf("reading %s: %w", layout.Instances, err)
	}
	for _, k := range kids {
		data, _, err := rc.Get(ctx, layout.Instance(k))
		if errors.Is(err, regcenter.ErrNoNode) {
			continue // gone while we looked
		}
		if err != nil {
			return nsView{}, err
		}
		info, err := decodeInstance(data)
		if err != nil {
			// Garbage: the server counts, with the default tolerance.
			log.Warn("instance node is not valid; using defaults for it", "server", k, "err", err)
			info = instanceInfo{FaultTolerance: 1}
		}
		v.instances[k] = info
	}
	return v, nil
}

// decodeInstance decodes an instance entry (/.placement/instances/{id}).
// Its error wraps stored.ErrBadValue and quotes at most the value's start.
func decodeInstance(data []byte) (instanceInfo, error) {
	if len(data) > stored.MaxValueBytes {
		return instanceInfo{}, fmt.Errorf("%w: instance entry of %d bytes", stored.ErrBadValue, len(data))
	}
	var info instanceInfo
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&info); err != nil {
		return instanceInfo{}, fmt.Errorf("%w: instance entry: %v", stored.ErrBadValue, err)
	}
	if info.FaultTolerance < 1 || info.AlarmThreshold < 0 || info.Slots < 0 || info.FreeSlots < 0 ||
		(info.Score != nil && (*info.Score < 0 || *info.Score > 100)) {
		return instanceInfo{}, fmt.Errorf("%w: instance entry out of range: %s", stored.ErrBadValue, quoteShort(string(data)))
	}
	return info, nil
}

// placeRequest is one job's reshard, waiting for the placer.
type placeRequest struct {
	job string
	// repair: not a reshard but a correction of the job's entry in the
	// table to current and unplaced, which ops fence (repairBooks).
	repair   bool
	total    int
	strategy string
	named    sharding.Strategy // a strategy by name, for the ElasticJob ones
	servers  []string          // the job's servers able to take items, sorted
	current  map[string][]int  // the job's assignment now
	unplaced []int             // the job's unplaced items now
	// ops returns the job's part of the transaction for an assignment. Its
	// writes of the assignment nodes are over the versions read with
	// current, so a request computed from a stale current fails alone
	// rather than moving the table away from the nodes.
	ops func(assign map[string][]int, unplaced []int) []regcenter.Op

	assign      map[string][]int
	unplacedOut []int
	err         error
	done        chan struct{}
	ctx         context.Context // the caller's: its end drops the request
}

// placer commits reshards for one scheduler, several at a time.
type placer struct {
	rc  regcenter.Center
	log *slog.Logger
	ctx context.Context // the scheduler's life

	mu      sync.Mutex
	pending []*placeRequest
	turn    chan struct{} // held by the one committing
}

func newPlacer(ctx context.Context, rc regcenter.Center, log *slog.Logger) *placer {
	return &placer{rc: rc, log: log, ctx: ctx, turn: make(chan struct{}, 1)}
}

// place queues req and returns once it is committed or has failed, or ctx
// ends. Whoever finds nobody committing commits everything queued. A
// request queued again for the same job replaces the one waiting.
func (p *placer) place(ctx context.Context, req *placeRequest) error {
	req.done = make(chan struct{})
	req.ctx = ctx
	p.mu.Lock()
	kept := p.pending[:0]
	for _, q := range p.pending {
		if q.job == req.job && q.repair == req.repair {
			q.err = fmt.Errorf("placing job %q: superseded by a newer reshard of it", q.job)
			close(q.done)
			continue
		}
		kept = append(kept, q)
	}
	p.pending = append(kept, req)
	p.mu.Unlock()
	for {
		select {
		case <-req.done:
			return req.err
		case <-ctx.Done():
			// A batch may still carry the request: it is fenced like any
			// reshard, and fails harmlessly if its flags are gone.
			return ctx.Err()
		case p.turn <- struct{}{}:
			p.mu.Lock()
			batch := p.pending
			p.pending = nil
			p.mu.Unlock()
			if len(batch) > 0 {
				p.commit(batch)
			}
			<-p.turn
		}
	}
}

// placeAttempts bounds how often a batch is recomputed after another
// scheduler's reshard moved the table under it.
const placeAttempts = 20

// placeTxnBytes is how much of ZooKeeper's request limit a batch's
// transaction may use; a job bigger than that alone goes alone.
const placeTxnBytes = 512 << 10

func (p *placer) commit(batch []*placeRequest) {
	ctx, cancel := context.WithTimeout(p.ctx, time.Minute)
	defer cancel()
	finish := func(req *placeRequest, err error) {
		req.err = err
		close(req.done)
	}
	var lastErr error
	for attempt := 0; len(batch) > 0; attempt++ {
		if attempt > 0 && lastErr != nil && !errors.Is(lastErr, regcenter.ErrBadVersion) {
			// Not a lost race but a failure (the connection, say): wait a
			// little before trying again.
			t := time.NewTimer(time.Duration(attempt) * 50 * time.Millisecond)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
		// The center is gone (closed, or its session with it): nothing
		// placed now could commit.
		final := errors.Is(lastErr, regcenter.ErrClosed) || errors.Is(lastErr, regcenter.ErrSessionLost)
		if attempt == placeAttempts || ctx.Err() != nil || final {
			for _, req := range batch {
				finish(req, fmt.Errorf("placing: gave up after %d attempts: %w", attempt, errors.Join(lastErr, ctx.Err())))
			}
			return
		}
		// Requests whose callers stopped waiting are dropped: they are
		// fenced like any write and would fail harmlessly, but retrying
		// for nobody holds up the scheduler's stop.
		kept := batch[:0]
		for _, req := range batch {
			if err := req.ctx.Err(); err != nil {
				finish(req, err)
				continue
			}
			kept = append(kept, req)
		}
		if batch = kept; len(batch) == 0 {
			return
		}
		table, version, err := p.readTable(ctx)
		if err != nil {
			lastErr = err
			continue
		}
		var view nsView
		if slices.ContainsFunc(batch, func(req *placeRequest) bool { return !req.repair }) {
			if view, err = readView(ctx, p.rc, p.log); err != nil {
				lastErr = err
				continue
			}
		}
		done, failed, err := p.commitOnce(ctx, batch, table, version, view)
		ended := make(map[*placeRequest]bool, len(done)+len(failed))
		for _, req := range done {
			finish(req, nil)
			ended[req] = true
		}
		for req, ferr := range failed {
			finish(req, ferr)
			ended[req] = true
		}
		remaining := batch[:0]
		for _, req := range batch {
			if !ended[req] {
				remaining = append(remaining, req)
			}
		}
		batch, lastErr = remaining, err
	}
}

// commitOnce computes every request against table and commits them in as
// few transactions as fit. It returns the requests committed, those that
// failed for a reason of their own (their job's fence, a flag gone), and
// the error that stopped it (nil when all are done).
func (p *placer) commitOnce(ctx context.Context, batch []*placeRequest, table loadTable, version int32, view nsView) ([]*placeRequest, map[*placeRequest]error, error) {
	var done []*placeRequest
	failed := map[*placeRequest]error{}
	t := table.clone()
	type part struct {
		req *placeRequest
		ops []regcenter.Op
	}
	var txn []part
	size := 0
	flush := func() error {
		if len(txn) == 0 {
			return nil
		}
		var ops []regcenter.Op
		for _, pt := range txn {
			ops = append(ops, pt.ops...)
		}
		if version < 0 {
			ops = append(ops, regcenter.CreateOp{Path: layout.Placement, Data: t.encode()})
		} else {
			ops = append(ops, regcenter.SetOp{Path: layout.Placement, Data: t.encode(), Version: version})
		}
		err := p.rc.Multi(ctx, ops...)
		var me *regcenter.MultiError
		if err != nil && errors.As(err, &me) && me.Index < len(ops)-1 {
			// One job's part failed: that job fails, the rest is retried.
			at := 0
			for _, pt := range txn {
				if me.Index < at+len(pt.ops) {
					failed[pt.req] = fmt.Errorf("reshard transaction: %w", err)
					break
				}
				at += len(pt.ops)
			}
			return err
		}
		if err != nil {
			return err
		}
		for _, pt := range txn {
			done = append(done, pt.req)
		}
		txn, size = nil, 0
		version++ // created: 0; set: one more
		return nil
	}
	for _, req := range batch {
		if req.repair && t.jobs[req.job].equal(unitsOf(req.current, req.unplaced)) {
			done = append(done, req) // the books are right
			continue
		}
		assign, unplaced, err := req.current, req.unplaced, error(nil)
		if !req.repair {
			assign, unplaced, err = placeJob(req, t, view)
		}
		if err != nil {
			failed[req] = err
			continue
		}
		before := t.clone()
		t.set(req.job, unitsOf(assign, unplaced))
		ops := req.ops(assign, unplaced)
		n := opsSize(ops)
		if len(txn) > 0 && size+n > placeTxnBytes {
			// Commit what is gathered with the table as it was before
			// this job, then carry on from there.
			after := t
			t = before
			if err := flush(); err != nil {
				return done, failed, err
			}
			t = after
		}
		req.assign, req.unplacedOut = assign, unplaced
		txn = append(txn, part{req, ops})
		size += n
	}
	return done, failed, flush()
}

// placeJob computes one job's assignment against the table as it stands.
func placeJob(req *placeRequest, t loadTable, view nsView) (map[string][]int, []int, error) {
	servers := view.excluded.eligible(req.servers)
	if req.named != nil {
		assign, err := sharding.Assign(req.named, req.job, servers, req.total)
		return assign, nil, err
	}
	// K counts this job at its new size; the load is the other jobs'
	// entries and this job's assignment as read.
	k := t.total() - t.jobs[req.job].total() + req.total
	load := t.unitsWithout(req.job)
	for s, items := range req.current {
		load[s] += len(items)
	}
	tolerance := map[string]int{}
	for _, s := range view.live() {
		tolerance[s] = view.instances[s].FaultTolerance
	}
	caps := sharding.Caps(k, tolerance)
	in := sharding.Input{
		Job: req.job, Total: req.total, Servers: servers,
		Current: req.current, Load: load, Cap: map[string]int{},
		Joined: t.joined, Namespace: view.live(), Units: k,
	}
	for _, s := range servers {
		if c, ok := caps[s]; ok {
			in.Cap[s] = c
		}
	}
	if req.strategy == sharding.Idlest {
		in.Free = map[string]int{}
		for _, s := range servers {
			if info, ok := view.instances[s]; ok && info.Score != nil {
				in.Free[s] = info.FreeSlots
			}
		}
	}
	res, err := sharding.Place(in)
	if err != nil {
		return nil, nil, err
	}
	return res.Assign, res.Unplaced, nil
}

// opsSize estimates an op list's share of a transaction.
func opsSize(ops []regcenter.Op) int {
	n := 0
	for _, op := range ops {
		n += 64
		switch o := op.(type) {
		case regcenter.CreateOp:
			n += len(o.Path) + len(o.Data)
		case regcenter.SetOp:
			n += len(o.Path) + len(o.Data)
		case regcenter.DeleteOp:
			n += len(o.Path)
		case regcenter.CheckOp:
			n += len(o.Path)
		}
	}
	return n
}

// readTable reads the load table and its version (-1: the node does not
// exist). A missing, empty or garbage table is rebuilt from every job's
// assignment; the commit then writes it over what was there.
func (p *placer) readTable(ctx context.Context) (loadTable, int32, error) {
	data, st, err := p.rc.Get(ctx, layout.Placement)
	version := int32(-1)
	switch {
	case errors.Is(err, regcenter.ErrNoNode):
	case err != nil:
		return loadTable{}, 0, err
	default:
		version = st.Version
		t, derr := decodeTable(data)
		if derr == nil {
			return t, version, nil
		}
		if len(data) > 0 {
			p.log.Warn("the namespace's load table is not valid: rebuilding it from the jobs' assignments", "node", layout.Placement, "err", derr)
		}
	}
	t, err := scanTable(ctx, p.rc)
	return t, version, err
}

// scanTable builds the table from every job's assignment nodes.
func scanTable(ctx context.Context, rc regcenter.Center) (loadTable, error) {
	t := newTable()
	jobs, err := namespaceJobs(ctx, rc)
	if err != nil {
		return loadTable{}, err
	}
	for _, j := range jobs {
		u, err := readJobUnits(ctx, rc, j)
		if err != nil {
			return loadTable{}, err
		}
		t.set(j, jobUnits{servers: u.PerServer, unplaced: u.Unplaced})
	}
	return t, nil
}

// reviewBooks is each scheduler's namespace-wide pass over the load
// table, once per reconcile round: it takes out the entries of jobs whose
// nodes are gone (deleted by hand, not with `shardjob remove`, which takes
// its job's entry out itself), and repairs the entries that credit units
// to a server that is not live. Those are repaired right after the change
// by whoever made it (repairBooks); this pass is for a change whose repair
// was lost (a process that died between the two) in a job nobody leads any
// more. In the steady state it costs three reads.
func (s *Scheduler) reviewBooks() {
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.reshardTimeout)
	defer cancel()
	if err := reviewBooks(ctx, s.rc, s.placer); err != nil && !errors.Is(err, regcenter.ErrBadVersion) && s.ctx.Err() == nil {
		s.log.Warn("reviewing the load table's books", "err", err)
	}
}

func reviewBooks(ctx context.Context, rc regcenter.Center, p *placer) error {
	data, st, err := rc.Get(ctx, layout.Placement)
	if errors.Is(err, regcenter.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	t, err := decodeTable(data)
	if err != nil {
		return nil // rebuilt from the assignments by the next reshard
	}
	names, err := namespaceJobs(ctx, rc)
	if err != nil {
		return err
	}
	exists := make(map[string]bool, len(names))
	for _, n := range names {
		exists[n] = true
	}
	live := map[string]bool{}
	kids, err := rc.Children(ctx, layout.Instances)
	if err != nil && !errors.Is(err, regcenter.ErrNoNode) {
		return err
	}
	for _, k := range kids {
		live[k] = true
	}
	gone, stale := 0, []string{}
	for _, j := range slices.Sorted(maps.Keys(t.jobs)) {
		if !exists[j] {
			t.set(j, jobUnits{})
			gone++
			continue
		}
		for sv := range t.jobs[j].servers {
			if !live[sv] {
				stale = append(stale, j)
				break
			}
		}
	}
	if gone > 0 {
		if _, err := rc.Set(ctx, layout.Placement, t.encode(), st.Version); err != nil {
			return err
		}
	}
	var errs []error
	for _, j := range stale {
		req, err := repairRequest(ctx, rc, j)
		if err == nil {
			err = p.place(ctx, req)
		}
		if err != nil && !errors.Is(err, regcenter.ErrNoNode) {
			errs = append(errs, fmt.Errorf("job %q: %w", j, err))
		}
	}
	return errors.Join(errs...)
}

// namespaceJobs lists the namespace's jobs: the root's children that are
// not the namespace's own nodes.
func namespaceJobs(ctx context.Context, rc regcenter.Center) ([]string, error) {
	names, err := rc.Children(ctx, "/")
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(names, func(n string) bool { return strings.HasPrefix(n, ".") }), nil
}

// readItems reads an item list node; missing or garbage is none.
func readItems(ctx context.Context, rc regcenter.Center, path string) ([]int, error) {
	items, _, err := readItemsVersion(ctx, rc, path)
	return items, err
}

// readItemsVersion is readItems with the node's version (-1: no node).
func readItemsVersion(ctx context.Context, rc regcenter.Center, path string) ([]int, int32, error) {
	data, st, err := rc.Get(ctx, path)
	if errors.Is(err, regcenter.ErrNoNode) {
		return nil, -1, nil
	}
	if err != nil {
		return nil, 0, err
	}
	items, err := layout.ParseItems(string(data))
	if err != nil {
		return nil, st.Version, nil // counted as none; the job's own reshard repairs it
	}
	return items, st.Version, nil
}
