package completion

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/shardjob/shardjob/failover"
	"github.com/shardjob/shardjob/internal/backfill"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/book"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/records"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
)

// recorded is what b's completion records as covered: what the record said
// before (b.Prior) and b's own fires.
func (s *Completer) recorded(j Job, b Result) fireplan.Cover {
	if j.Book.Schedule == nil {
		return fireplan.CoverOf(fireplan.Span{First: b.Fire, Last: b.UpTo()})
	}
	return b.Prior.With(j.Book.Schedule, b.Fire, b.UpTo())
}

// completion is what one completion transaction must do for a batch; the
// skip sets are corrected after a failed attempt (a node we thought was there
// was not, or the reverse). The sets are nil until something is put in
// them (setIn): a completion that goes through at once makes none.
type completion struct {
	batch         []Result
	skipRunning   map[int]bool // our running mark is already gone
	keep          map[int]bool // our running mark stays, held for the next fires (Config.Keep)
	skipDequeue   map[int]bool // failover queue entry gone, or already queued
	skipClaim     map[int]bool // failover claim already gone
	skipRetry     map[int]bool // retry node already gone
	skipBackfill  map[int]bool // backfill progress node gone (the backfill cleared)
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
	// for each item it writes a completed node of (see Completer.recorded).
	recorded []fireplan.Cover
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
	// transaction defers (see flush.go).
	every    time.Duration
	now      time.Time
	deferred map[int]stored.Completed
	// journalled: the deferred records go to the completion journal
	// (journal.go), and every record written of an item kept here names
	// it (records.Reader.Names).
	journalled bool
	// nodeJournal is the journal each item's completed node named when
	// unfence read it; journals the journal each batch entry's record
	// names as written (by index; nil while none names one).
	nodeJournal map[int]string
	journals    []string
}

// target is what one operation of a completion transaction stands for: one
// of an item's nodes (layout.Running, layout.Failover, layout.Completed,
// layout.Misfire, layout.Retry, or queueEntry), or the session's fence (fenceNode).
type target struct {
	item int
	node string
}

// Targets that are not an item's execution node.
const (
	queueEntry   = "failover queue entry"
	backfillNode = "backfill progress"
	fenceNode    = "fence"
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
// Complete). It is Complete's own function, not part of it, so that an
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
//
// keep, when not nil, is which items keep their marks, decided as the
// completion began (awaitPrevious); nil asks Config.Keep now.
func (s *Completer) writeCompletion(sess *regcenter.Session, j Job, batch []Result, keep map[int]bool) {
	c := completion{batch: batch, recorded: make([]fireplan.Cover, len(batch)), keep: keep}
	if keep == nil {
		c.keep = s.Keep(sess, batch)
	}
	if c.every, c.journalled = s.recordInterval(j); c.every > 0 && len(c.keep) > 0 {
		c.now = s.Now()
	}
	// Running marks and failover claims are ephemeral nodes of sess. They
	// are deleted only in a transaction fenced on sess's generation: a
	// transaction the client replays on a later session after a lost lease
	// must not delete a mark another instance created meanwhile. Without
	// the fence (the generation has ended) they are left for the session's
	// end, or for the marker's stale-mark removal (job/internal/marks) if the session survived.
	c.fence, c.fenced = s.Fence.SessionFence(sess)
	if c.fenced && len(c.keep) > 0 {
		// A steady fire of held items defers every record (flush.go):
		// nothing to send, and no context or timer to make for it.
		if s.completionOps(j, &c); len(c.ops) == 0 {
			if len(c.deferred) > 0 {
				s.paid(j, &c)
				s.journalDeferred(j, &c)
			}
			return
		}
	}
	s.noteWriting(j, batch, c.keep, c.fenced)
	s.rereadUnknownPriors(&c)
	// Not under the session, which may end before its completion is
	// written: under shutdown's last wait for background work.
	ctx, cancel := context.WithTimeout(s.Life, max(time.Minute, 10*s.SessionTimeout()))
	defer cancel()
	s.flushUnrecorded(ctx, &c)
	step := stepReread
	if !c.fenced && s.unfence(ctx, j, &c) != nil {
		step = stepUnfence
	}
	s.skipOlderFailovers(ctx, j, &c)
	delay := 50 * time.Millisecond
	for attempt := 0; attempt < 4*len(batch)+8; {
		next, err := step, error(nil)
		switch step {
		case stepUnfence:
			if err = s.unfence(ctx, j, &c); err == nil {
				next = stepReread
			}
		case stepReread:
			if err = s.reread(ctx, &c); err == nil {
				next = stepCommit
			}
		case stepCommit:
			next, err = s.commit(ctx, j, &c)
		}
		switch {
		case next == stepDone:
			return
		case next == stepSplit:
			// The halves keep the marks decided here: the items' next
			// fires may already run on them (noteWriting).
			keep := decided(c.keep)
			half := len(batch) / 2
			s.writeCompletion(sess, j, batch[:half], keep)
			s.writeCompletion(sess, j, batch[half:], keep)
			return
		case err != nil:
			if !s.backOff(ctx, &delay, err, len(batch)) {
				return
			}
		case step == stepCommit:
			attempt++
		}
		step = next
	}
	s.Log.Warn("giving up marking items completed", "items", len(batch), "last_err", c.lastErr)
}

// rereadUnknownPriors has the completion read first the records of c's
// runs that record their fires over a node known to exist whose version
// they do not know: a make-up run whose record could not be read (it ran
// all the same), for one. Written over any version, its record would list
// its own fires only, and drop what the node listed: fires completed, run
// again by the next make-up run. (The unfenced form reads every node it
// writes over anyway.)
func (s *Completer) rereadUnknownPriors(c *completion) {
	if !c.fenced {
		return
	}
	for _, b := range c.batch {
		if b.Halted == nil && !b.Settled && b.Kind.Recorded() && !b.Prior.Versioned && s.Records.Exists(b.Item) {
			setIn(&c.reread, b.Item)
		}
	}
}

// noteWriting tells the book which of batch's runs, plain fires ended
// whose marks stay held here (keep) under the live session (fenced), now
// wait for their completion's write, or for the completion before it: the
// items' next fires need not wait with them (book.Book.Writing). Runs
// beside others (OverlapAllow) are left out: their fires run beside them
// anyway.
func (s *Completer) noteWriting(j Job, batch []Result, keep map[int]bool, fenced bool) {
	if !fenced || len(keep) == 0 || j.Book.Overlap == fireplan.OverlapAllow {
		return
	}
	var items []int
	var fires []time.Time
	for _, b := range batch {
		if keep[b.Item] && b.Kind == book.Fire && b.Halted == nil && !b.Settled {
			items, fires = append(items, b.Item), append(fires, b.Fire)
		}
	}
	if len(items) > 0 {
		s.Book.Writing(items, fires)
	}
}

// flushUnrecorded writes, before c's transaction deletes their running
// marks, the deferred records of c's items whose runs record nothing of
// their own — a trigger's run, one cut short, one settled — and whose marks
// this completion releases (not kept). Every release writes first: the
// next owner of a released item reads its record, and a record left
// deferred behind the mark would make it run again the fires this
// instance ran. A run that records writes its prior, pending part
// included, in the transaction itself.
func (s *Completer) flushUnrecorded(ctx context.Context, c *completion) {
	if !s.Records.HasPending() {
		return
	}
	var released map[int]bool
	for _, b := range c.batch {
		if c.keep[b.Item] || (b.Kind.Recorded() && b.Halted == nil && !b.Settled) {
			continue
		}
		if released == nil {
			released = map[int]bool{}
		}
		released[b.Item] = true
	}
	if released != nil {
		s.FlushReleased(ctx, func(it int) bool { return released[it] })
	}
}

// skipOlderFailovers leaves alone the records of c's failover runs that
// make up for an older fire than their item's regular owner has completed
// since: completed never moves backwards. (A run that read the record adds
// to it instead: its prior.)
func (s *Completer) skipOlderFailovers(ctx context.Context, j Job, c *completion) {
	for _, b := range c.batch {
		if b.Kind == book.Failover && b.Halted == nil && b.Prior.IsZero() {
			if rec, err := s.readRecord(ctx, b.Item); err == nil && rec.Cover.Through().After(b.UpTo()) {
				setIn(&c.skipCompleted, b.Item)
			}
		}
	}
}

// backOff waits *delay before a completion's next try, doubling it up to a
// second; it reports false, warning that the fires may run again, if ctx
// ends first.
func (s *Completer) backOff(ctx context.Context, delay *time.Duration, err error, items int) bool {
	select {
	case <-ctx.Done():
		s.Log.Warn("cannot mark items completed; their fires may run again", "items", items, "err", err)
		return false
	case <-time.After(*delay):
	}
	*delay = min(2*(*delay), time.Second)
	return true
}

// commit builds and sends c's transaction. It returns the step to take
// next — stepDone once written, when nothing is left to write, or after a
// failure no retry can fix — and the error to wait out first, if any.
func (s *Completer) commit(ctx context.Context, j Job, c *completion) (completionStep, error) {
	s.completionOps(j, c)
	if len(c.ops) == 0 {
		if len(c.deferred) > 0 {
			s.paid(j, c) // every record deferred: nothing to send
			s.journalDeferred(j, c)
		}
		return stepDone, nil
	}
	if n := len(c.batch) - len(c.deferred); n > 1 {
		s.Records.Sized(regcenter.MultiBytes(c.ops...), n)
	}
	err := s.Center.Multi(ctx, c.ops...)
	if s.Log.Enabled(ctx, slog.LevelDebug) {
		s.logRecordWrites(c, err)
	}
	if err == nil {
		s.paid(j, c)
		if len(c.deferred) > 0 {
			s.journalDeferred(j, c)
		}
		if c.journalled {
			s.journalCovered(c)
		}
		return stepDone, nil
	}
	return s.commitFailed(c, err)
}

// paid records a successful completion: completed nodes now exist, and
// misfire debts the executions covered are settled. The records change in
// the book's step, each before its item's debt.
func (s *Completer) paid(j Job, c *completion) {
	var at time.Time
	s.Book.Paid(j.Book, len(c.batch), func(i int) (book.Ran, bool) {
		res := c.batch[i]
		if res.Kind == book.Backfill {
			// A backfill's past fire pays no debt of the schedule's.
			if res.Halted == nil && !res.Settled && res.Backfill != "" && !c.skipBackfill[res.Item] && s.Backfills != nil {
				s.Backfills.Ran(res.Item, res.Backfill, res.Fire)
			}
			return book.Ran{}, false
		}
		if res.Halted != nil {
			return book.Ran{}, false
		}
		var failed []stored.FailedRun
		if c.failed != nil {
			failed = c.failed[i]
		}
		if m, ok := c.deferred[i]; ok {
			s.Records.Deferred(res.Item, records.Record{Cover: c.recorded[i], Version: res.Prior.Version, Versioned: true, Failed: failed, Journal: res.Prior.Journal}, m)
		} else if v, ok := c.wrote[res.Item]; ok {
			if at.IsZero() {
				at = s.Now()
			}
			var jn string
			if c.journals != nil {
				jn = c.journals[i]
			}
			s.Records.Wrote(res.Item, records.Record{Cover: c.recorded[i], Version: v, Versioned: v >= 0, Failed: failed, Journal: jn, Foreign: s.Reader.Foreign(jn)}, at)
		} else {
			s.Records.Seen(res.Item, true)
		}
		return res.Ran(), true
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
func (s *Completer) completionOps(j Job, c *completion) {
	c.ops, c.targets = c.ops[:0], c.targets[:0]
	clear(c.deferred)
	for i, b := range c.batch {
		delete(c.wrote, b.Item)
		if !c.skipRunning[b.Item] && !c.keep[b.Item] {
			c.add(regcenter.DeleteOp{Path: s.Paths.ItemNode(b.Item, layout.Running), Version: -1}, b.Item, layout.Running)
		}
		if b.Kind == book.Failover && !c.skipClaim[b.Item] {
			c.add(regcenter.DeleteOp{Path: s.Paths.ItemNode(b.Item, layout.Failover), Version: -1}, b.Item, layout.Failover)
		}
		if b.Halted != nil {
			// Cut short by shutdown: hand the item over now. A failover run
			// cut short stays queued (its claim is released above).
			if b.Kind != book.Failover && errors.Is(b.Halted, s.Closed) && j.Failover && !c.skipDequeue[b.Item] {
				e := failover.Entry{Item: b.Item, Fire: b.Fire.UnixMilli(), From: s.Server, Attempts: b.FailedAttempts}
				if !b.Through.IsZero() {
					// Cut short once started: it may have done part of its work.
					e.MayHaveRun = b.UpTo().UnixMilli()
				}
				for _, op := range failover.NewQueue(s.Center, s.Name).EnqueueOps([]failover.Entry{e}) {
					c.add(op, b.Item, queueEntry)
				}
			}
			continue
		}
		if b.RetryNoted && !c.skipRetry[b.Item] {
			c.add(regcenter.DeleteOp{Path: s.Paths.ItemNode(b.Item, layout.Retry), Version: -1}, b.Item, layout.Retry)
		}
		if b.Kind == book.Failover && !c.skipDequeue[b.Item] {
			// With the version the claim read: an earlier debt merged into
			// the entry meanwhile keeps it queued.
			v := s.Claims.ClaimVersion(b.Item)
			c.add(regcenter.DeleteOp{Path: s.Paths.FailoverItem(b.Item), Version: v}, b.Item, queueEntry)
		}
		// A trigger is not a fire of the schedule: it leaves the record of
		// completed fires alone, which failover decisions rely on.
		misfireNode := s.Book.MisfireNodeCovered(b.Ran())
		if b.Kind == book.Backfill && b.Backfill != "" && !b.Settled && !c.skipBackfill[b.Item] {
			// A backfill's progress goes with its run's completion: a
			// crash re-runs at most the fire in flight.
			p := backfill.Progress{ID: b.Backfill, Through: b.Fire.UnixMilli()}
			c.add(regcenter.SetOp{Path: s.Paths.BackfillItem(b.Item), Data: p.Encode(), Version: b.BackfillVersion}, b.Item, backfillNode)
		}
		if !c.skipCompleted[b.Item] && b.Kind.Recorded() && !b.Settled {
			upTo := b.UpTo()
			rec := s.recorded(j, b)
			c.recorded[i] = rec
			mark := stored.Completed{Server: s.Server, Kind: b.Kind.String(), Begin: b.Begin.UnixMilli(), End: b.End.UnixMilli()}
			nodeJournal, read := c.nodeJournal[b.Item]
			if !read {
				nodeJournal = b.Prior.Journal
			}
			mark.Journal = s.Reader.Names(c.keep[b.Item], c.journalled, nodeJournal)
			if !upTo.Equal(b.Fire) {
				mark.Since = b.Fire.UnixMilli()
			}
			if b.Err != nil {
				mark.Error = stored.RecordedError(b.Err)
			}
			if fs := stored.FailedAfter(b.Prior.Failed, rec, b.Fire, upTo, b.Err); fs != nil {
				mark.Failed = fs
				if c.failed == nil {
					c.failed = make([][]stored.FailedRun, len(c.batch))
				}
				c.failed[i] = fs
			} else if c.failed != nil {
				c.failed[i] = nil
			}
			if !misfireNode && s.defers(c, b) {
				if c.deferred == nil {
					c.deferred = map[int]stored.Completed{}
				}
				c.deferred[i] = mark // its cover is c.recorded[i]
				continue
			}
			c.noteJournal(i, mark.Journal)
			mark.Fire, mark.Ran = rec.Through().UnixMilli(), rec.Ran()
			data := mark.Marshal()
			p := s.Paths.ItemNode(b.Item, layout.Completed)
			if s.Records.Exists(b.Item) {
				v, ok := c.completedVersion[b.Item]
				if !ok {
					v = -1
					if b.Prior.Versioned {
						v = b.Prior.Version
					}
				}
				c.add(regcenter.SetOp{Path: p, Data: data, Version: v}, b.Item, layout.Completed)
				to := int32(-1) // unknown: written over any version
				if v >= 0 {
					to = v + 1
				}
				c.setWrote(b.Item, to)
			} else {
				c.add(regcenter.CreateOp{Path: p, Data: data}, b.Item, layout.Completed)
				c.setWrote(b.Item, 0)
			}
		}
		if misfireNode {
			c.add(regcenter.DeleteOp{Path: s.Paths.ItemNode(b.Item, layout.Misfire), Version: -1}, b.Item, layout.Misfire)
		}
	}
}

// logRecordWrites logs, at debug level, the completed records c's
// transaction wrote (err nil) or tried to.
func (s *Completer) logRecordWrites(c *completion, err error) {
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
		s.Log.Debug("record write", "item", c.targets[i].item, "over_version", v, "journal", m.Journal, "kind", m.Kind,
			"through", time.UnixMilli(m.Fire), "fenced", c.fenced, "kept", c.keep[c.targets[i].item], "err", err)
	}
}
