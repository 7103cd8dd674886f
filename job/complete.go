package job

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/shardjob/shardjob/failover"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/book"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
)

// A completion transaction carries as many items as fit in
// completionBytes, by the size per item of this job's last completion
// (records.Cache.ItemsPerTxn), and never more than completionsPerTxn. A
// steady fire of held items writes a record alone per item, about 200
// bytes: one transaction for some 4,000 items. One the registry still
// refuses as too large (a smaller Config.MaxNodeBytes, or a size per item
// that grew) is split in two, and each half written (stepSplit).
const (
	completionBytes   = regcenter.DefaultMaxNodeBytes * 7 / 8
	completionsPerTxn = MaxShardingTotalCount
)

// completionLinger is how long a completion waits for one more result of
// its run before it commits what it has: items that end together share a
// transaction, and an item that ends alone waits this much longer for its
// completion mark (never for its next fire).
const completionLinger = 2 * time.Millisecond

// completeAll collects n results and writes their completion marks in
// group commits: a transaction carries every result that arrived while
// the previous one was in flight, or within completionLinger of the one
// before, so a fire of many fast items costs a transaction per
// transaction's worth of items (records.Cache.ItemsPerTxn), not one per
// item.
func (r *runner) completeAll(sess *regcenter.Session, cfg *spec, results <-chan itemResult, n int) {
	var linger *time.Timer // made once there is a second result to wait for
	defer func() {
		if linger != nil {
			linger.Stop()
		}
	}()
	perTxn := 1
	if n > 1 {
		perTxn = r.records.ItemsPerTxn(completionBytes, completionsPerTxn)
	}
	for received := 0; received < n; {
		batch := []itemResult{<-results}
		received++
	collect:
		for received < n && len(batch) < perTxn {
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

// recorded is what b's completion records as covered: what the record said
// before (b.prior) and b's own fires.
func (r *runner) recorded(cfg *spec, b itemResult) cover {
	sched, _, err := cfg.Schedule()
	if err != nil {
		return fireplan.CoverOf(fireplan.Span{First: b.fire, Last: b.coveredUpTo()})
	}
	return b.prior.With(sched, b.fire, b.coveredUpTo())
}

// coveredUpTo is the latest scheduled fire an execution makes up for: its
// own fire, or for a misfire or failover run every fire due when its item
// was reserved (ShardingContext.Through; see book.Ran.UpTo).
func (b itemResult) coveredUpTo() time.Time { return b.ran().UpTo() }

// ran is b as the book settles what it paid.
func (b itemResult) ran() book.Ran {
	return book.Ran{Item: b.item, Kind: bookKind(b.kind), Fire: b.fire, Through: b.through}
}

// completion is what one completion transaction must do for a batch; the
// skip sets are corrected after a failed attempt (a node we thought was there
// was not, or the reverse). The sets are nil until something is put in
// them (setIn): a completion that goes through at once makes none.
type completion struct {
	batch         []itemResult
	skipRunning   map[int]bool // our running mark is already gone
	keep          map[int]bool // our running mark stays, held for the next fires (hold.go)
	skipDequeue   map[int]bool // failover queue entry gone, or already queued
	skipClaim     map[int]bool // failover claim already gone
	skipCompleted map[int]bool // a newer completion is recorded
	// completedVersion, when set (unfenced), is the version each item's
	// completed node must still have.
	completedVersion map[int]int32
	// reread holds the items whose completed node another instance wrote
	// since this one last read or wrote it: read again, and add to it.
	reread map[int]bool
	// tried holds, for the items of reread, the version the failed write
	// expected (mustExist for a create that met the node): a read that
	// still says so was served by a server behind the one that refused the
	// write (a ZooKeeper follower catching up after a restart), and is
	// waited out, at most maxStaleReads times a completion.
	tried      map[int]int32
	staleReads int
	// wrote is the version each item's completed node has once the
	// transaction is applied, where known (-1 otherwise).
	wrote map[int]int32
	// recorded holds, by position in batch, what the transaction records
	// for each item it writes a completed node of (see runner.recorded).
	recorded []cover
	// failed holds, by position in batch, the failed runs the record of
	// each item lists (see stored.FailedAfter); nil while none lists any.
	failed [][]stored.FailedRun
	// fence leads the transaction while fenced (see writeCompletion).
	fence  regcenter.Op
	fenced bool
	// ops is the transaction last built; targets says, by position, what
	// each of its operations stands for.
	ops     []regcenter.Op
	targets []target
	// lastErr is the latest transaction's failure, for the warning of a
	// completion given up.
	lastErr error
	// every is the scheduler's record interval for this completion (0:
	// every record is written now), and now the time it is measured from;
	// deferred holds, by position in batch, the marks of the records the
	// transaction defers (see recordflush.go).
	every    time.Duration
	now      time.Time
	deferred map[int]stored.Completed
	// journalled: the deferred records go to the completion journal
	// (journal.go), and every record written of an item kept here names
	// it (recordJournal).
	journalled bool
	// nodeJournal is the journal each item's completed node named when
	// unfence read it; journals the journal each batch entry's record
	// names as written (by index; nil while none names one).
	nodeJournal map[int]string
	journals    []string
}

// target is what one operation of a completion transaction stands for: one
// of an item's nodes (layout.Running, layout.Failover, layout.Completed,
// layout.Misfire, or queueEntry), or the session's fence (fenceNode).
type target struct {
	item int
	node string
}

// Targets that are not an item's execution node.
const (
	queueEntry = "failover queue entry"
	fenceNode  = "fence"
)

// add appends op, standing for item's node, to the transaction, led by
// the fence while fenced.
func (c *completion) add(op regcenter.Op, item int, node string) {
	if len(c.ops) == 0 {
		if c.ops == nil {
			// Room for the usual transaction: the fence, and an item's
			// mark to delete and record to write (more grow it). Made at
			// the first operation: a completion that defers every record
			// makes none.
			c.ops = make([]regcenter.Op, 0, 1+2*len(c.batch))
			c.targets = make([]target, 0, 1+2*len(c.batch))
		}
		if c.fenced {
			c.ops = append(c.ops, c.fence)
			c.targets = append(c.targets, target{item: -1, node: fenceNode})
		}
	}
	c.ops = append(c.ops, op)
	c.targets = append(c.targets, target{item: item, node: node})
}

// setWrote notes the version item's completed node has once the
// transaction is applied (see completion.wrote), making the map if need be.
func (c *completion) setWrote(item int, version int32) {
	if c.wrote == nil {
		c.wrote = make(map[int]int32, len(c.batch))
	}
	c.wrote[item] = version
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
			r.book.NoteMisfire(cfg.book, b.item, b.fire)
		}
	}
	// It ran here: whoever ran it before is no reason to hold back from
	// its queued debt any more.
	r.fo.Unblock(items)
	r.release(items)
}

// completionStep is where the writing of a completion stands.
type completionStep int

const (
	stepUnfence completionStep = iota // read the versions the unfenced form writes over
	stepReread                        // read again the records others wrote meanwhile
	stepCommit                        // send the transaction
	stepSplit                         // too large: write each half of the batch on its own
	stepDone                          // written, or given up
)

// writeCompletion writes a monitored job's completion of batch (see
// complete). It is complete's own function, not part of it, so that an
// unmonitored job's completion does not take its stack frame.
//
// A completion is retried until it is written: across a lost connection, a
// ZooKeeper ensemble without quorum and a new session (the replay-safe,
// unfenced form then). Given up, the fires it covers would look unrun and
// be run again. Bounded all the same (I4): by its attempts, and cut when
// shutdown has waited its last for background work — not when its grace
// period for running items ends: the items it cut short are handed over by
// their completions. Failures to wait out (a registry that cannot answer)
// are not counted as attempts; failures the completion corrects are.
func (r *runner) writeCompletion(sess *regcenter.Session, cfg *spec, batch []itemResult) {
	c := completion{batch: batch, recorded: make([]cover, len(batch))}
	c.keep = r.keepsHolds(sess, batch)
	if c.every, c.journalled = r.recordInterval(cfg); c.every > 0 && len(c.keep) > 0 {
		c.now = r.s.opts.now()
	}
	// Running marks and failover claims are ephemeral nodes of sess. They
	// are deleted only in a transaction fenced on sess's generation: a
	// transaction the client replays on a later session after a lost lease
	// must not delete a mark another instance created meanwhile. Without
	// the fence (the generation has ended) they are left for the session's
	// end, or for the marker's stale-mark removal (job/internal/marks) if the session survived.
	c.fence, c.fenced = r.elect.SessionFence(sess)
	if c.fenced && len(c.keep) > 0 {
		// A steady fire of held items defers every record (recordflush.go):
		// nothing to send, and no context or timer to make for it.
		if r.completionOps(cfg, &c); len(c.ops) == 0 {
			if len(c.deferred) > 0 {
				r.paid(cfg, &c)
				r.journalDeferred(cfg, &c)
			}
			return
		}
	}
	// Not under the session, which may end before its completion is
	// written: under shutdown's last wait for background work.
	ctx, cancel := context.WithTimeout(r.ctx.record, max(time.Minute, 10*r.sessionTimeout()))
	defer cancel()
	r.flushUnrecorded(ctx, &c)
	step := stepReread
	if !c.fenced && r.unfence(ctx, cfg, &c) != nil {
		step = stepUnfence
	}
	r.skipOlderFailovers(ctx, cfg, &c)
	delay := 50 * time.Millisecond
	for attempt := 0; attempt < 4*len(batch)+8; {
		next, err := step, error(nil)
		switch step {
		case stepUnfence:
			if err = r.unfence(ctx, cfg, &c); err == nil {
				next = stepReread
			}
		case stepReread:
			if err = r.reread(ctx, &c); err == nil {
				next = stepCommit
			}
		case stepCommit:
			next, err = r.commit(ctx, cfg, &c)
		}
		switch {
		case next == stepDone:
			return
		case next == stepSplit:
			half := len(batch) / 2
			r.writeCompletion(sess, cfg, batch[:half])
			r.writeCompletion(sess, cfg, batch[half:])
			return
		case err != nil:
			if !r.backOff(ctx, &delay, err, len(batch)) {
				return
			}
		case step == stepCommit:
			attempt++
		}
		step = next
	}
	r.log.Warn("giving up marking items completed", "items", len(batch), "last_err", c.lastErr)
}

// flushUnrecorded writes, before c's transaction deletes their running
// marks, the deferred records of c's items whose runs record nothing of
// their own — a trigger's run, one cut short, one settled — and whose marks
// this completion releases (not kept). Every release writes first: the
// next owner of a released item reads its record, and a record left
// deferred behind the mark would make it run again the fires this
// instance ran. A run that records writes its prior, pending part
// included, in the transaction itself.
func (r *runner) flushUnrecorded(ctx context.Context, c *completion) {
	if !r.records.HasPending() {
		return
	}
	var released map[int]bool
	for _, b := range c.batch {
		if c.keep[b.item] || (b.kind != KindTrigger && b.halted == nil && !b.settled) {
			continue
		}
		if released == nil {
			released = map[int]bool{}
		}
		released[b.item] = true
	}
	if released != nil {
		r.flushReleased(ctx, func(it int) bool { return released[it] })
	}
}

// skipOlderFailovers leaves alone the records of c's failover runs that
// make up for an older fire than their item's regular owner has completed
// since: completed never moves backwards. (A run that read the record adds
// to it instead: its prior.)
func (r *runner) skipOlderFailovers(ctx context.Context, cfg *spec, c *completion) {
	for _, b := range c.batch {
		if b.kind == KindFailover && b.halted == nil && b.prior.IsZero() {
			if done, err := r.completedFire(ctx, b.item); err == nil && done.After(b.coveredUpTo()) {
				setIn(&c.skipCompleted, b.item)
			}
		}
	}
}

// backOff waits *delay before a completion's next try, doubling it up to a
// second; it reports false, warning that the fires may run again, if ctx
// ends first.
func (r *runner) backOff(ctx context.Context, delay *time.Duration, err error, items int) bool {
	select {
	case <-ctx.Done():
		r.log.Warn("cannot mark items completed; their fires may run again", "items", items, "err", err)
		return false
	case <-time.After(*delay):
	}
	*delay = min(2*(*delay), time.Second)
	return true
}

// commit builds and sends c's transaction. It returns the step to take
// next — stepDone once written, when nothing is left to write, or after a
// failure no retry can fix — and the error to wait out first, if any.
func (r *runner) commit(ctx context.Context, cfg *spec, c *completion) (completionStep, error) {
	r.completionOps(cfg, c)
	if len(c.ops) == 0 {
		if len(c.deferred) > 0 {
			r.paid(cfg, c) // every record deferred: nothing to send
			r.journalDeferred(cfg, c)
		}
		return stepDone, nil
	}
	if n := len(c.batch) - len(c.deferred); n > 1 {
		r.records.Sized(regcenter.MultiBytes(c.ops...), n)
	}
	err := r.rc.Multi(ctx, c.ops...)
	if r.log.Enabled(ctx, slog.LevelDebug) {
		r.logRecordWrites(c, err)
	}
	if err == nil {
		r.paid(cfg, c)
		if len(c.deferred) > 0 {
			r.journalDeferred(cfg, c)
		}
		if c.journalled {
			r.journalCovered(c)
		}
		return stepDone, nil
	}
	return r.commitFailed(c, err)
}

// paid records a successful completion: completed nodes now exist, and
// misfire debts the executions covered are settled. The records change in
// the book's step, each before its item's debt.
func (r *runner) paid(cfg *spec, c *completion) {
	var at time.Time
	r.book.Paid(cfg.book, len(c.batch), func(i int) (book.Ran, bool) {
		res := c.batch[i]
		if res.halted != nil {
			return book.Ran{}, false
		}
		var failed []stored.FailedRun
		if c.failed != nil {
			failed = c.failed[i]
		}
		if m, ok := c.deferred[i]; ok {
			r.records.Deferred(res.item, record{Cover: c.recorded[i], Version: res.prior.Version, Versioned: true, Failed: failed, Journal: res.prior.Journal}, m)
		} else if v, ok := c.wrote[res.item]; ok {
			if at.IsZero() {
				at = r.s.opts.now()
			}
			var j string
			if c.journals != nil {
				j = c.journals[i]
			}
			r.records.Wrote(res.item, record{Cover: c.recorded[i], Version: v, Versioned: v >= 0, Failed: failed, Journal: j, Foreign: r.foreignJournal(j)}, at)
		} else {
			r.records.Seen(res.item, true)
		}
		return res.ran(), true
	})
}

// noteJournal keeps the journal batch entry i's record names as written,
// made only when one names a journal: a steady fire's records, deferred,
// need no slice.
func (c *completion) noteJournal(i int, journal string) {
	if c.journals == nil {
		if journal == "" {
			return
		}
		c.journals = make([]string, len(c.batch))
	}
	c.journals[i] = journal
}

// completionOps builds the completion transaction in c.ops, led by the
// fence while fenced (see add), each operation's target beside it; none,
// not even the fence, when there is nothing to write.
func (r *runner) completionOps(cfg *spec, c *completion) {
	c.ops, c.targets = c.ops[:0], c.targets[:0]
	clear(c.deferred)
	for i, b := range c.batch {
		delete(c.wrote, b.item)
		if !c.skipRunning[b.item] && !c.keep[b.item] {
			c.add(regcenter.DeleteOp{Path: r.paths.ItemNode(b.item, layout.Running), Version: -1}, b.item, layout.Running)
		}
		if b.kind == KindFailover && !c.skipClaim[b.item] {
			c.add(regcenter.DeleteOp{Path: r.paths.ItemNode(b.item, layout.Failover), Version: -1}, b.item, layout.Failover)
		}
		if b.halted != nil {
			// Cut short by shutdown: hand the item over now. A failover run
			// cut short stays queued (its claim is released above).
			if b.kind != KindFailover && errors.Is(b.halted, ErrSchedulerClosed) && cfg.Failover && !c.skipDequeue[b.item] {
				e := failover.Entry{Item: b.item, Fire: b.fire.UnixMilli(), From: r.serverID(), Attempts: b.failedAttempts}
				if !b.through.IsZero() {
					// Cut short once started: it may have done part of its work.
					e.MayHaveRun = b.coveredUpTo().UnixMilli()
				}
				for _, op := range failover.NewQueue(r.rc, r.name).EnqueueOps([]failover.Entry{e}) {
					c.add(op, b.item, queueEntry)
				}
			}
			continue
		}
		if b.kind == KindFailover && !c.skipDequeue[b.item] {
			// With the version the claim read: an earlier debt merged into
			// the entry meanwhile keeps it queued.
			v := r.fo.ClaimVersion(b.item)
			c.add(regcenter.DeleteOp{Path: r.paths.FailoverItem(b.item), Version: v}, b.item, queueEntry)
		}
		// A trigger is not a fire of the schedule: it leaves the record of
		// completed fires alone, which failover decisions rely on.
		misfireNode := r.book.MisfireNodeCovered(b.ran())
		if !c.skipCompleted[b.item] && b.kind != KindTrigger && !b.settled {
			upTo := b.coveredUpTo()
			rec := r.recorded(cfg, b)
			c.recorded[i] = rec
			mark := stored.Completed{Server: r.serverID(), Kind: string(b.kind), Begin: b.begin.UnixMilli(), End: b.end.UnixMilli()}
			nodeJournal, read := c.nodeJournal[b.item]
			if !read {
				nodeJournal = b.prior.Journal
			}
			mark.Journal = r.recordJournal(c.keep[b.item], c.journalled, nodeJournal)
			if !upTo.Equal(b.fire) {
				mark.Since = b.fire.UnixMilli()
			}
			if b.err != nil {
				mark.Error = stored.RecordedError(b.err)
			}
			if fs := stored.FailedAfter(b.prior.Failed, rec, b.fire, upTo, b.err); fs != nil {
				mark.Failed = fs
				if c.failed == nil {
					c.failed = make([][]stored.FailedRun, len(c.batch))
				}
				c.failed[i] = fs
			} else if c.failed != nil {
				c.failed[i] = nil
			}
			if !misfireNode && r.defers(c, b) {
				if c.deferred == nil {
					c.deferred = map[int]stored.Completed{}
				}
				c.deferred[i] = mark // its cover is c.recorded[i]
				continue
			}
			c.noteJournal(i, mark.Journal)
			mark.Fire, mark.Ran = rec.Through().UnixMilli(), rec.Ran()
			data := mark.Marshal()
			p := r.paths.ItemNode(b.item, layout.Completed)
			if r.records.Exists(b.item) {
				v, ok := c.completedVersion[b.item]
				if !ok {
					v = -1
					if b.prior.Versioned {
						v = b.prior.Version
					}
				}
				c.add(regcenter.SetOp{Path: p, Data: data, Version: v}, b.item, layout.Completed)
				to := int32(-1) // unknown: written over any version
				if v >= 0 {
					to = v + 1
				}
				c.setWrote(b.item, to)
			} else {
				c.add(regcenter.CreateOp{Path: p, Data: data}, b.item, layout.Completed)
				c.setWrote(b.item, 0)
			}
		}
		if misfireNode {
			c.add(regcenter.DeleteOp{Path: r.paths.ItemNode(b.item, layout.Misfire), Version: -1}, b.item, layout.Misfire)
		}
	}
}

// logRecordWrites logs, at debug level, the completed records c's
// transaction wrote (err nil) or tried to.
func (r *runner) logRecordWrites(c *completion, err error) {
	for i, op := range c.ops {
		if c.targets[i].node != layout.Completed {
			continue
		}
		var data []byte
		v := int32(-3) // a create
		switch o := op.(type) {
		case regcenter.SetOp:
			data, v = o.Data, o.Version
		case regcenter.CreateOp:
			data = o.Data
		}
		m, derr := stored.DecodeCompleted(data)
		if derr != nil {
			continue
		}
		r.log.Debug("record write", "item", c.targets[i].item, "over_version", v, "journal", m.Journal, "kind", m.Kind,
			"through", time.UnixMilli(m.Fire), "fenced", c.fenced, "kept", c.keep[c.targets[i].item], "err", err)
	}
}
