package job

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/shardjob/shardjob/failover"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// completionsPerTxn bounds the items of one completion transaction (two to
// four operations each), within ZooKeeper's request limit.
const completionsPerTxn = 1000

// completionLinger is how long a completion waits for one more result of
// its run before it commits what it has: items that end together share a
// transaction, and an item that ends alone waits this much longer for its
// completion mark (never for its next fire).
const completionLinger = 2 * time.Millisecond

// completeAll collects n results and writes their completion marks in
// group commits: a transaction carries every result that arrived while
// the previous one was in flight, or within completionLinger of the one
// before, so a fire of many fast items costs a transaction per
// completionsPerTxn items, not one per item.
func (r *runner) completeAll(sess *regcenter.Session, cfg *spec, results <-chan itemResult, n int) {
	var linger *time.Timer // made once there is a second result to wait for
	defer func() {
		if linger != nil {
			linger.Stop()
		}
	}()
	for received := 0; received < n; {
		batch := []itemResult{<-results}
		received++
	collect:
		for received < n && len(batch) < completionsPerTxn {
			if linger == nil {
				linger = time.NewTimer(completionLinger)
			} else {
				linger.Reset(completionLinger)
			}
			select {
			case res := <-results:
				batch = append(batch, res)
				received++
			case <-linger.C:
				break collect
			}
		}
		r.complete(sess, cfg, batch)
	}
}

// covers reports whether an execution makes up for a misfire owed since.
func (b itemResult) covers(since time.Time) bool {
	if (b.kind == KindMisfire || b.kind == KindFailover) && !since.IsZero() && !b.through.IsZero() && since.After(b.through) {
		return false // a debt of fires after the make-up run stands
	}
	return b.halted == nil && (since.IsZero() || !b.fire.After(since) || b.kind == KindMisfire)
}

// recorded is what b's completion records as covered: what the record said
// before (b.prior) and b's own fires.
func (r *runner) recorded(cfg *spec, b itemResult) cover {
	sched, _, err := cfg.Schedule()
	if err != nil {
		return cover{spans: []span{{b.fire, r.coveredUpTo(cfg, b)}}}
	}
	return b.prior.with(sched, b.fire, r.coveredUpTo(cfg, b))
}

// settleLocked pays, from item b.item's misfire debt (owed since), the
// fires execution b made up for (a debt noted at registration, say, that
// the first run covered): a debt within them is gone; one that reaches
// past them now starts after them. A debt older than b's own fire stays
// whole. r.mu is held.
func (r *runner) settleLocked(cfg *spec, b itemResult, since time.Time) {
	upTo := r.coveredUpTo(cfg, b)
	if b.halted != nil || since.Before(b.fire) || since.After(upTo) {
		return
	}
	last := r.owed.lastOwed(b.item)
	if !last.After(upTo) {
		r.owed.forget(b.item)
		r.log.Debug("owed run settled", "item", b.item, "since", since, "by", b.kind, "fire", b.fire)
		return
	}
	next := last
	if sched, _, err := cfg.Schedule(); err == nil {
		if n := sched.Next(upTo); !n.IsZero() && n.Before(last) {
			next = n
		}
	}
	r.owed.owedFrom(b.item, next)
	r.log.Debug("owed run partly settled", "item", b.item, "since", next, "by", b.kind, "fire", b.fire)
}

// coveredUpTo is the latest scheduled fire an execution makes up for: its
// own fire, or for a misfire or failover run every fire due when its item
// was reserved (ShardingContext.Through).
func (r *runner) coveredUpTo(_ *spec, b itemResult) time.Time {
	if (b.kind == KindMisfire || b.kind == KindFailover) && b.through.After(b.fire) {
		return b.through
	}
	return b.fire
}

// completion is what one completion transaction must do for a batch; the
// skip sets are corrected after a failed attempt (a node we thought was there
// was not, or the reverse). The sets are nil until something is put in
// them (setIn): a completion that goes through at once makes none.
type completion struct {
	batch         []itemResult
	skipRunning   map[int]bool // our running mark is already gone
	skipDequeue   map[int]bool // failover queue entry gone, or already queued
	skipClaim     map[int]bool // failover claim already gone
	skipCompleted map[int]bool // a newer completion is recorded
	// completedVersion, when set (unfenced), is the version each item's
	// completed node must still have.
	completedVersion map[int]int32
	// reread holds the items whose completed node another instance wrote
	// since this one last read or wrote it: read again, and add to it.
	reread map[int]bool
	// wrote is the version each item's completed node has once the
	// transaction is applied, where known (-1 otherwise).
	wrote map[int]int32
	// recorded holds, by position in batch, what the transaction records
	// for each item it writes a completed node of (see runner.recorded).
	recorded []cover
}

// setIn adds k to the set *m, making it if need be.
func setIn(m *map[int]bool, k int) {
	if *m == nil {
		*m = map[int]bool{}
	}
	(*m)[k] = true
}

// complete ends batch's executions: it writes their completion (a
// monitored job), notes the fires a lost session cut short as owed here,
// and releases the items.
func (r *runner) complete(sess *regcenter.Session, cfg *spec, batch []itemResult) {
	if !cfg.Unmonitored {
		r.writeCompletion(sess, cfg, batch)
	}
	items := make([]int, len(batch))
	for i, b := range batch {
		items[i] = b.item
		// Cut short by a lost session (not by shutdown): this instance
		// owes the fire a run once it is back. If the session really
		// expired, failover may run it elsewhere too: at least once, and
		// never at the same time (the running mark).
		if b.halted != nil && !errors.Is(b.halted, ErrSchedulerClosed) {
			r.noteMisfire(b.item, b.fire, cfg)
		}
	}
	r.mu.Lock()
	for _, it := range items {
		// It ran here: whoever ran it before is no reason to hold
		// back from its queued debt any more.
		delete(r.claimBlocked, it)
	}
	r.mu.Unlock()
	r.release(items)
}

// writeCompletion writes a monitored job's completion of batch (see
// complete). It is complete's own function, not part of it, so that an
// unmonitored job's completion does not take its stack frame.
func (r *runner) writeCompletion(sess *regcenter.Session, cfg *spec, batch []itemResult) {
	// A completion is retried until it is written: across a lost
	// connection, a ZooKeeper ensemble without quorum and a new session
	// (the replay-safe, unfenced form then). Given up, the fires it covers
	// would look unrun and be run again. Bounded all the same (I4), and cut
	// when shutdown has waited its last for background work — not when its
	// grace period for running items ends: the items it cut short are
	// handed over by their completions.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(sess.Ctx()), max(time.Minute, 10*r.sessionTimeout()))
	defer cancel()
	defer context.AfterFunc(r.recordCtx, cancel)()
	c := completion{batch: batch, wrote: make(map[int]int32, len(batch)), recorded: make([]cover, len(batch))}
	// Running marks and failover claims are ephemeral nodes of sess. They
	// are deleted only in a transaction fenced on sess's generation: a
	// transaction the client replays on a later session after a lost lease
	// must not delete a mark another instance created meanwhile. Without
	// the fence (the generation has ended) they are left for the session's
	// end, or for dropStaleMark if the session survived.
	fence, fenced := r.elect.SessionFence(sess)
	// unfence switches to the unfenced form; it fails (and is called
	// again) while ZooKeeper cannot answer.
	unfence := func() error {
		fenced = false
		for _, b := range batch {
			setIn(&c.skipRunning, b.item)
			setIn(&c.skipClaim, b.item)
		}
		// Unfenced, the transaction may be replayed late, on a later
		// session: its completed marks are written only over the version
		// read now, and not at all over a newer fire.
		c.completedVersion = map[int]int32{}
		for _, b := range batch {
			if b.halted != nil || b.kind == KindTrigger || c.skipCompleted[b.item] {
				continue
			}
			data, st, err := r.rc.Get(ctx, r.paths.ItemNode(b.item, layout.Completed))
			switch {
			case errors.Is(err, regcenter.ErrNoNode):
				r.mu.Lock()
				r.completedSeen[b.item] = false
				r.mu.Unlock()
			case errors.Is(err, regcenter.ErrConnectionLoss), errors.Is(err, regcenter.ErrSessionLost):
				return err
			case err != nil:
				setIn(&c.skipCompleted, b.item) // cannot tell: leave the record alone
			default:
				var m completedMark
				if json.Unmarshal(data, &m) == nil && time.UnixMilli(m.Fire).After(r.recorded(cfg, b).through()) {
					setIn(&c.skipCompleted, b.item)
					continue
				}
				c.completedVersion[b.item] = st.Version
				r.mu.Lock()
				r.completedSeen[b.item] = true
				r.mu.Unlock()
			}
		}
		return nil
	}
	unfenced := false // the unfenced form's reads are done
	if !fenced {
		unfenced = unfence() == nil
	}
	// A failover run makes up for an older fire than the item's regular
	// owner may have completed since: never move completed backwards. (A
	// run that read the record adds to it instead: its prior.)
	for _, b := range batch {
		if b.kind == KindFailover && b.halted == nil && b.prior.isZero() {
			if done, err := r.completedFire(ctx, b.item); err == nil && done.After(r.coveredUpTo(cfg, b)) {
				setIn(&c.skipCompleted, b.item)
			}
		}
	}
	backoff := 50 * time.Millisecond
	wait := func(err error) bool {
		select {
		case <-ctx.Done():
			r.log.Warn("cannot mark items completed; their fires may run again", "items", len(batch), "err", err)
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
		return true
	}
	for attempt := 0; attempt < 4*len(batch)+8; {
		if !fenced && !unfenced {
			if err := unfence(); err != nil {
				if !wait(err) {
					return
				}
				continue
			}
			unfenced = true
		}
		if err := r.reread(ctx, &c); err != nil {
			if !wait(err) {
				return
			}
			continue
		}
		ops := r.completionOps(cfg, &c)
		if len(ops) == 0 {
			return
		}
		if fenced {
			ops = append([]regcenter.Op{fence}, ops...)
		}
		err := r.rc.Multi(ctx, ops...)
		if err == nil {
			r.paid(cfg, &c)
			return
		}
		var me *regcenter.MultiError
		switch {
		case errors.Is(err, regcenter.ErrConnectionLoss), errors.Is(err, regcenter.ErrSessionLost):
			// The transaction may or may not have been applied; the
			// corrections below make a replay converge either way. A
			// session that ended takes its marks with it: go on unfenced.
			if errors.Is(err, regcenter.ErrSessionLost) {
				fenced = false
			}
			if !wait(err) {
				return
			}
			continue
		case fenced && errors.As(err, &me) && me.Index == 0:
			fenced = false // the generation ended meanwhile: unfence at the next attempt
		case !r.correct(&c, err):
			r.log.Warn("cannot mark items completed", "err", err)
			return
		}
		attempt++
	}
	r.log.Warn("giving up marking items completed", "items", len(batch))
}

// reread reads the completed nodes of c.reread again (see completion)
// and makes them the priors the batch's records add to.
func (r *runner) reread(ctx context.Context, c *completion) error {
	for it := range c.reread {
		rec, err := r.readRecord(ctx, it)
		if err != nil {
			return err
		}
		delete(c.reread, it)
		for i := range c.batch {
			if c.batch[i].item == it {
				c.batch[i].prior = rec
			}
		}
		r.mu.Lock()
		r.completedSeen[it] = rec.versioned
		r.mu.Unlock()
	}
	return nil
}

// paid records a successful completion: completed nodes now exist, and
// misfire debts the executions covered are settled.
func (r *runner) paid(cfg *spec, c *completion) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, b := range c.batch {
		if b.halted != nil {
			continue
		}
		r.completedSeen[b.item] = true
		if v, ok := c.wrote[b.item]; ok {
			r.covered[b.item] = record{cover: c.recorded[i], version: v, versioned: v >= 0}
		}
		if since, owed := r.owed.owed(b.item); owed {
			r.settleLocked(cfg, b, since)
		}
		if since, _ := r.owed.owed(b.item); b.covers(since) {
			r.owed.setNode(b.item, false)
			if c := r.remoteWaits[b.item]; c != nil {
				c()
				delete(r.remoteWaits, b.item)
			}
		}
	}
}

// correct updates c after a failed transaction; false means the failure is
// not one a retry can fix.
func (r *runner) correct(c *completion, err error) bool {
	var me *regcenter.MultiError
	if !errors.As(err, &me) {
		return false
	}
	missing := errors.Is(me.Err, regcenter.ErrNoNode)
	exists := errors.Is(me.Err, regcenter.ErrNodeExists)
	moved := errors.Is(me.Err, regcenter.ErrBadVersion)
	if item, ok := r.queueItemOf(me.Op); ok && (missing || exists || moved) {
		setIn(&c.skipDequeue, item)
		return true
	}
	item, node, ok := r.itemNodeOf(me.Op)
	if !ok {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case node == layout.Running && missing:
		setIn(&c.skipRunning, item)
	case node == layout.Failover && missing:
		setIn(&c.skipClaim, item)
	case node == layout.Completed && missing:
		r.completedSeen[item] = false
	case node == layout.Completed && (exists || moved) && c.completedVersion == nil:
		// Written meanwhile by another instance: add to what it wrote.
		setIn(&c.reread, item)
	case node == layout.Completed && exists:
		r.completedSeen[item] = true
	case node == layout.Completed && moved:
		setIn(&c.skipCompleted, item) // unfenced, written meanwhile: that record stands
	case node == layout.Misfire && missing:
		r.owed.setNode(item, false)
	default:
		return false
	}
	return true
}

// completionOps builds the completion transaction.
func (r *runner) completionOps(cfg *spec, c *completion) []regcenter.Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ops []regcenter.Op
	for i, b := range c.batch {
		delete(c.wrote, b.item)
		if !c.skipRunning[b.item] {
			ops = append(ops, regcenter.DeleteOp{Path: r.paths.ItemNode(b.item, layout.Running), Version: -1})
		}
		if b.kind == KindFailover && !c.skipClaim[b.item] {
			ops = append(ops, regcenter.DeleteOp{Path: r.paths.ItemNode(b.item, layout.Failover), Version: -1})
		}
		if b.halted != nil {
			// Cut short by shutdown: hand the item over now. A failover run
			// cut short stays queued (its claim is released above).
			if b.kind != KindFailover && errors.Is(b.halted, ErrSchedulerClosed) && cfg.Failover && !c.skipDequeue[b.item] {
				ops = append(ops, failover.NewQueue(r.rc, r.name).EnqueueOps([]failover.Entry{{Item: b.item, Fire: b.fire.UnixMilli(), From: r.serverID()}})...)
			}
			continue
		}
		if b.kind == KindFailover && !c.skipDequeue[b.item] {
			// With the version the claim read: an earlier debt merged into
			// the entry meanwhile keeps it queued.
			v, ok := r.claims[b.item]
			if !ok {
				v = -1
			}
			ops = append(ops, regcenter.DeleteOp{Path: r.paths.FailoverItem(b.item), Version: v})
		}
		// A trigger is not a fire of the schedule: it leaves the record of
		// completed fires alone, which failover decisions rely on.
		if !c.skipCompleted[b.item] && b.kind != KindTrigger && !b.settled {
			upTo := r.coveredUpTo(cfg, b)
			rec := r.recorded(cfg, b)
			c.recorded[i] = rec
			mark := completedMark{Server: r.serverID(), Fire: rec.through().UnixMilli(), Ran: rec.ran(), Kind: b.kind, Begin: b.begin.UnixMilli(), End: b.end.UnixMilli()}
			if !upTo.Equal(b.fire) {
				mark.Since = b.fire.UnixMilli()
			}
			if b.err != nil {
				mark.Error = b.err.Error()
			}
			data, _ := json.Marshal(mark)
			p := r.paths.ItemNode(b.item, layout.Completed)
			if r.completedSeen[b.item] {
				v, ok := c.completedVersion[b.item]
				if !ok {
					v = -1
					if b.prior.versioned {
						v = b.prior.version
					}
				}
				ops = append(ops, regcenter.SetOp{Path: p, Data: data, Version: v})
				c.wrote[b.item] = -1
				if v >= 0 {
					c.wrote[b.item] = v + 1
				}
			} else {
				ops = append(ops, regcenter.CreateOp{Path: p, Data: data})
				c.wrote[b.item] = 0
			}
		}
		if since, _ := r.owed.owed(b.item); r.owed.hasNode(b.item) && b.covers(since) {
			ops = append(ops, regcenter.DeleteOp{Path: r.paths.ItemNode(b.item, layout.Misfire), Version: -1})
		}
	}
	return ops
}

// queueItemOf parses an op's path as a failover queue entry.
func (r *runner) queueItemOf(op regcenter.Op) (int, bool) {
	prefix := r.paths.FailoverItems() + "/"
	p := opPath(op)
	if !strings.HasPrefix(p, prefix) {
		return 0, false
	}
	item, err := strconv.Atoi(p[len(prefix):])
	return item, err == nil
}

// itemNodeOf parses an op's path as /{job}/execution/{item}/{node}.
func (r *runner) itemNodeOf(op regcenter.Op) (int, string, bool) {
	prefix := r.paths.Execution() + "/"
	p := opPath(op)
	if !strings.HasPrefix(p, prefix) {
		return 0, "", false
	}
	itemStr, node, ok := strings.Cut(p[len(prefix):], "/")
	if !ok {
		return 0, "", false
	}
	item, err := strconv.Atoi(itemStr)
	if err != nil {
		return 0, "", false
	}
	return item, node, true
}

func opPath(op regcenter.Op) string {
	switch o := op.(type) {
	case regcenter.CreateOp:
		return o.Path
	case regcenter.SetOp:
		return o.Path
	case regcenter.DeleteOp:
		return o.Path
	case regcenter.CheckOp:
		return o.Path
	}
	return ""
}
