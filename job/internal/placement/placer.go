package placement

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
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

// Request is one job's reshard, or the repair of its entry, waiting for
// the placer. The caller fills in the job and what it read; Place fills
// in Assign and UnplacedOut.
type Request struct {
	// Job is the job's name.
	Job string
	// Repair: not a reshard but a correction of the job's entry in the
	// table to Current and Unplaced, which Ops fence (job's repairBooks).
	Repair bool
	// Total is the job's item count; Strategy its sharding strategy's
	// name, and Named the strategy itself for the ElasticJob ones (nil
	// for sharding.Balanced and sharding.Idlest).
	Total    int
	Strategy string
	Named    sharding.Strategy
	// Servers are the job's servers able to take items, sorted.
	Servers []string
	// Current is the job's assignment now; Unplaced its unplaced items now.
	Current  map[string][]int
	Unplaced []int
	// Ops returns the job's part of the transaction for an assignment. Its
	// writes of the assignment nodes are over the versions read with
	// Current, so a request computed from a stale Current fails alone
	// rather than moving the table away from the nodes.
	Ops func(assign map[string][]int, unplaced []int) []regcenter.Op

	// Assign and UnplacedOut are what was committed, once Place returns
	// nil: the items each server holds and those no server may take.
	Assign      map[string][]int
	UnplacedOut []int

	err  error
	done chan struct{}
	ctx  context.Context // the caller's: its end drops the request
}

// Placer commits reshards for one scheduler, several at a time.
type Placer struct {
	rc  regcenter.Center
	log *slog.Logger
	ctx context.Context // the scheduler's life

	mu      sync.Mutex
	pending []*Request
	turn    chan struct{} // held by the one committing

	// What follows is the turn holder's alone.

	// known is the table as this placer last read or wrote it, so that
	// a commit finding the node unchanged (one Exists) decodes nothing:
	// a reconcile round's repairs, one per job led, then cost the
	// namespace one decode, not one each.
	known knownTable
	// scan is a rebuild of the table cut off by the end of a commit,
	// resumed by the next one (rebuild.go).
	scan *rebuild
}

// knownTable is a load table with the node's identity when it said so:
// its creation and its version. A node deleted and made again has
// another Czxid, a node set another Version.
type knownTable struct {
	ok      bool
	table   Table
	czxid   int64
	version int32
}

// NewPlacer returns the placer of a scheduler whose life is ctx: its
// commits end with it.
func NewPlacer(ctx context.Context, rc regcenter.Center, log *slog.Logger) *Placer {
	return &Placer{rc: rc, log: log, ctx: ctx, turn: make(chan struct{}, 1)}
}

// Place queues req and returns once it is committed or has failed, or ctx
// ends. Whoever finds nobody committing commits everything queued. A
// request queued again for the same job replaces the one waiting.
func (p *Placer) Place(ctx context.Context, req *Request) error {
	req.done = make(chan struct{})
	req.ctx = ctx
	p.mu.Lock()
	kept := p.pending[:0]
	for _, q := range p.pending {
		if q.Job == req.Job && q.Repair == req.Repair {
			q.err = fmt.Errorf("placing job %q: superseded by a newer reshard of it", q.Job)
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

// Attempts bounds how often in a row a batch is recomputed without a
// request ending (another scheduler's reshard moved the table under it),
// and how often package job tries a write over a version read (a probe's
// counter) before it gives up.
const Attempts = 20

// placeTxnBytes is how much of ZooKeeper's request limit a batch's
// transaction may use; a job bigger than that alone goes alone.
const placeTxnBytes = 512 << 10

// txnLimit is the most a transaction may carry, the table included: the
// registry centers' default request limit (regcenter.DefaultMaxNodeBytes).
// Past it a transaction is refused whole (regcenter.ErrTooLarge), so a
// batch is cut short of it, the table's size counted.
const txnLimit = regcenter.DefaultMaxNodeBytes

func (p *Placer) commit(batch []*Request) {
	ctx, cancel := context.WithTimeout(p.ctx, time.Minute)
	defer cancel()
	finish := func(req *Request, err error) {
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
		if attempt == Attempts || ctx.Err() != nil || final {
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
		var view View
		if slices.ContainsFunc(batch, func(req *Request) bool { return !req.Repair }) {
			if view, err = ReadView(ctx, p.rc, p.log); err != nil {
				lastErr = err
				continue
			}
		}
		done, failed, err := p.commitOnce(ctx, batch, table, version, view)
		ended := make(map[*Request]bool, len(done)+len(failed))
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
		if len(remaining) < len(batch) {
			// Progress: requests ended (committed, or failed alone on
			// their own fence). Only rounds that end none count against
			// Attempts: concurrent leaves may make many requests of one
			// batch stale, each found by its own transaction.
			attempt = -1
		}
		batch, lastErr = remaining, err
	}
}

// commitOnce computes every request against table and commits them in as
// few transactions as fit. It returns the requests committed, those that
// failed for a reason of their own (their job's fence, a flag gone), and
// the error that stopped it (nil when all are done). table is not
// changed: it may be the placer's known table, which is copied before the
// first change, so that a batch of repairs finding the books right costs
// no copy of the namespace.
func (p *Placer) commitOnce(ctx context.Context, batch []*Request, table Table, version int32, view View) ([]*Request, map[*Request]error, error) {
	var done []*Request
	failed := map[*Request]error{}
	t, owned := table, false
	// The node's identity, when known: what the table is remembered by
	// once a commit sets it.
	czxid, identified := p.known.czxid, p.known.ok
	type part struct {
		req *Request
		ops []regcenter.Op
	}
	var txn []part
	size, grown := 0, 0 // the parts' bytes; what they may add to the table's
	flush := func() error {
		if len(txn) == 0 {
			return nil
		}
		var ops []regcenter.Op
		for _, pt := range txn {
			ops = append(ops, pt.ops...)
		}
		data := t.encode()
		if version < 0 {
			ops = append(ops, regcenter.CreateOp{Path: layout.Placement, Data: data})
		} else {
			ops = append(ops, regcenter.SetOp{Path: layout.Placement, Data: data, Version: version})
		}
		err := p.rc.Multi(ctx, ops...)
		if errors.Is(err, regcenter.ErrTooLarge) {
			// The table has outgrown one transaction with these jobs'
			// parts: they fail, not retried in this commit; the rest is
			// computed again from the table read.
			for _, pt := range txn {
				failed[pt.req] = fmt.Errorf("placing job %q: the load table (%d bytes) and the reshard's writes (%d bytes) do not fit one transaction: %w",
					pt.req.Job, len(data), size, err)
			}
			return err
		}
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
			p.known = knownTable{}
			return err
		}
		for _, pt := range txn {
			done = append(done, pt.req)
		}
		txn, size, grown = nil, 0, 0
		t.wireBytes = len(data)
		if version < 0 || !identified {
			// Created: its Czxid is not known until it is read.
			p.known = knownTable{}
		} else {
			p.known = knownTable{ok: true, table: t, czxid: czxid, version: version + 1}
		}
		owned = false // t is the known table now: copied before changing it
		version++     // created: 0; set: one more
		return nil
	}
	for _, req := range batch {
		if req.Repair && t.jobs[req.Job].equal(unitsOf(req.Current, req.Unplaced)) {
			done = append(done, req) // the books are right
			continue
		}
		assign, unplaced, err := req.Current, req.Unplaced, error(nil)
		if !req.Repair {
			assign, unplaced, err = placeJob(req, t, view)
		}
		if err != nil {
			failed[req] = err
			continue
		}
		ops := req.Ops(assign, unplaced)
		n := opsSize(ops)
		g := t.entryBytes(req.Job)
		if len(txn) > 0 && (size+n > placeTxnBytes || t.wireBytes+grown+g+size+n > txnLimit) {
			// Commit what is gathered, with the table as it is before
			// this job, then carry on from there.
			if err := flush(); err != nil {
				return done, failed, err
			}
		}
		if !owned {
			t, owned = t.clone(), true
		}
		t.set(req.Job, unitsOf(assign, unplaced))
		req.Assign, req.UnplacedOut = assign, unplaced
		txn = append(txn, part{req, ops})
		size, grown = size+n, grown+g
	}
	return done, failed, flush()
}

// placeJob computes one job's assignment against the table as it stands.
func placeJob(req *Request, t Table, view View) (map[string][]int, []int, error) {
	servers := view.excluded.Eligible(req.Servers)
	if req.Named != nil {
		assign, err := sharding.Assign(req.Named, req.Job, servers, req.Total)
		return assign, nil, err
	}
	// K counts this job at its new size; the load is the other jobs'
	// entries and this job's assignment as read.
	k := t.total() - t.jobs[req.Job].total() + req.Total
	load := t.unitsWithout(req.Job)
	for s, items := range req.Current {
		load[s] += len(items)
	}
	// The caps count the live instances, but not one still starting that
	// has not registered this job: it cannot take the job's items yet,
	// and counted, the caps of those that can would leave items unplaced
	// until it has (a fleet started at once).
	tolerance := map[string]int{}
	for _, s := range view.live() {
		if info := view.Instances[s]; !info.Starting || slices.Contains(servers, s) {
			tolerance[s] = info.FaultTolerance
		}
	}
	caps := sharding.Caps(k, tolerance)
	in := sharding.Input{
		Job: req.Job, Total: req.Total, Servers: servers,
		Current: req.Current, Load: load, Cap: map[string]int{},
		Joined: t.joined, Namespace: view.live(), Units: k,
	}
	for _, s := range servers {
		if c, ok := caps[s]; ok {
			in.Cap[s] = c
		}
	}
	if req.Strategy == sharding.Idlest {
		in.Free = map[string]int{}
		for _, s := range servers {
			if info, ok := view.Instances[s]; ok && info.Score != nil {
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
// exist). When the node is what this placer last read or wrote, one
// Exists says so and nothing is decoded. A missing, empty or garbage table
// is rebuilt from every job's assignment (rebuild.go) and written back at
// once.
func (p *Placer) readTable(ctx context.Context) (Table, int32, error) {
	if p.known.ok {
		ok, st, err := p.rc.Exists(ctx, layout.Placement)
		if err != nil {
			return Table{}, 0, err
		}
		if ok && st.Czxid == p.known.czxid && st.Version == p.known.version {
			return p.known.table, p.known.version, nil
		}
		p.known = knownTable{}
	}
	data, st, err := p.rc.Get(ctx, layout.Placement)
	version := int32(-1)
	switch {
	case errors.Is(err, regcenter.ErrNoNode):
	case err != nil:
		return Table{}, 0, err
	default:
		version = st.Version
		t, derr := DecodeTable(data)
		if derr == nil {
			p.known = knownTable{ok: true, table: t, czxid: st.Czxid, version: st.Version}
			p.scan = nil // a valid table: no rebuild needed
			return t, version, nil
		}
		if len(data) > 0 {
			p.log.Warn("the namespace's load table is not valid: rebuilding it from the jobs' assignments", "node", layout.Placement, "err", derr)
		}
	}
	return p.rebuildTable(ctx, version, st)
}
