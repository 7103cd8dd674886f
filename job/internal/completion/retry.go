package completion

import (
	"context"
	"errors"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
)

// A completion whose transaction failed, written all the same: the
// unfenced form once the session's generation ended (unfence), the answer
// to a refused transaction (commitFailed, correct), and the records read
// again when another instance wrote them meanwhile (reread).

// unfence switches c to the unfenced form: its running marks and claims
// are left for the session's end, and since the transaction may be
// replayed late, on a later session, its completed marks are written only
// over the versions read now, and not at all over a newer fire. It fails
// while ZooKeeper cannot answer (and is called again).
func (s *Completer) unfence(ctx context.Context, j Job, c *completion) error {
	c.fenced = false
	for _, b := range c.batch {
		setIn(&c.skipRunning, b.Item)
		setIn(&c.skipClaim, b.Item)
	}
	c.completedVersion = map[int]int32{}
	c.nodeJournal = map[int]string{}
	sched := j.Book.Schedule
	for i, b := range c.batch {
		if b.Halted != nil || !b.Kind.Recorded() || c.skipCompleted[b.Item] {
			continue
		}
		data, st, err := s.Center.Get(ctx, s.Paths.ItemNode(b.Item, layout.Completed))
		switch {
		case errors.Is(err, regcenter.ErrNoNode):
			s.Records.Seen(b.Item, false)
		case errors.Is(err, regcenter.ErrConnectionLoss), errors.Is(err, regcenter.ErrSessionLost):
			return err
		case err != nil:
			setIn(&c.skipCompleted, b.Item) // cannot tell: leave the record alone
		default:
			m, derr := stored.DecodeCompleted(data)
			if derr == nil && time.UnixMilli(m.Fire).After(s.recorded(j, b).Through()) {
				setIn(&c.skipCompleted, b.Item)
				continue
			}
			if derr == nil {
				// Written over this version: keep what it lists, and the
				// journal it names (records.Reader.Names).
				if sched != nil {
					c.batch[i].Prior.Cover = b.Prior.Cover.Union(sched, m.Cover())
				}
				c.nodeJournal[b.Item] = m.Journal
			}
			c.completedVersion[b.Item] = st.Version
			s.Records.Seen(b.Item, true)
		}
	}
	return nil
}

// commitFailed is commit's answer to a transaction that failed with err.
// (Its own function: the error it looks into escapes, and a transaction
// that succeeds makes no room for it.)
func (s *Completer) commitFailed(c *completion, err error) (completionStep, error) {
	c.lastErr = err
	var me *regcenter.MultiError
	switch {
	case errors.Is(err, regcenter.ErrTooLarge) && len(c.batch) > 1:
		return stepSplit, nil // refused whole, nothing applied
	case errors.Is(err, regcenter.ErrConnectionLoss), errors.Is(err, regcenter.ErrSessionLost):
		// The transaction may or may not have been applied; the
		// corrections make a replay converge either way. A session that
		// ended takes its marks with it: go on unfenced.
		if errors.Is(err, regcenter.ErrSessionLost) && c.fenced {
			return stepUnfence, err
		}
		return stepReread, err
	case !errors.As(err, &me) || me.Index < 0 || me.Index >= len(c.targets):
	case c.targets[me.Index].node == fenceNode:
		return stepUnfence, nil // the generation ended meanwhile
	case s.correct(c, c.targets[me.Index], me.Err):
		if t := c.targets[me.Index]; t.node == layout.Completed && c.reread[t.item] {
			c.noteTried(t.item, c.ops[me.Index])
		}
		return stepReread, nil
	}
	s.Log.Warn("cannot mark items completed", "err", err)
	return stepDone, nil
}

// mustExist is completion.tried's mark of a create that met the node.
const mustExist = -2

// maxStaleReads bounds the reads of a completion found behind the write it
// follows (completion.tried): after that many, what is read is taken.
const maxStaleReads = 10

// errStaleRead is a record read behind the write that failed before it.
var errStaleRead = errors.New("the record read is older than the write the registry refused: a server behind the others; waiting for it")

// noteTried keeps the version op, a completed node's write that failed for
// the node's state, expected.
func (c *completion) noteTried(item int, op regcenter.Op) {
	if c.tried == nil {
		c.tried = map[int]int32{}
	}
	switch o := op.(type) {
	case regcenter.CreateOp:
		c.tried[item] = mustExist
	case regcenter.SetOp:
		c.tried[item] = o.Version
	}
}

// reread reads the completed nodes of c.reread again (see completion)
// and makes them the priors the batch's records add to. A read that says
// what the refused write expected is errStaleRead, to be waited out.
func (s *Completer) reread(ctx context.Context, c *completion) error {
	for it := range c.reread {
		rec, err := s.readRecord(ctx, it)
		if err != nil {
			return err
		}
		if v, ok := c.tried[it]; ok && c.staleReads < maxStaleReads &&
			(!rec.Versioned || (v != mustExist && rec.Version == v)) {
			c.staleReads++
			return errStaleRead
		}
		delete(c.tried, it)
		delete(c.reread, it)
		for i := range c.batch {
			if c.batch[i].Item == it {
				c.batch[i].Prior = rec
			}
		}
		s.Records.Seen(it, rec.Versioned)
	}
	return nil
}

// correct updates c after a transaction failed with err at an operation
// standing for t; false means the failure is not one a retry can fix.
func (s *Completer) correct(c *completion, t target, err error) bool {
	missing := errors.Is(err, regcenter.ErrNoNode)
	exists := errors.Is(err, regcenter.ErrNodeExists)
	moved := errors.Is(err, regcenter.ErrBadVersion)
	if t.node == queueEntry {
		if missing || exists || moved {
			setIn(&c.skipDequeue, t.item)
			return true
		}
		return false
	}
	switch {
	case t.node == layout.Running && missing:
		setIn(&c.skipRunning, t.item)
	case t.node == layout.Failover && missing:
		setIn(&c.skipClaim, t.item)
	case t.node == layout.Retry && missing:
		setIn(&c.skipRetry, t.item)
	case t.node == backfillNode && (missing || moved):
		// Gone (the backfill cleared), or written since it was read:
		// by this completion's earlier attempt whose answer was lost,
		// or by no one else while the mark is held. Never put back.
		setIn(&c.skipBackfill, t.item)
	case t.node == layout.Completed && missing:
		s.Records.Seen(t.item, false)
	case t.node == layout.Completed && (exists || moved) && c.completedVersion == nil:
		// Written meanwhile by another instance: add to what it wrote.
		setIn(&c.reread, t.item)
	case t.node == layout.Completed && exists:
		s.Records.Seen(t.item, true)
	case t.node == layout.Completed && moved:
		setIn(&c.skipCompleted, t.item) // unfenced, written meanwhile: that record stands
	case t.node == layout.Misfire && missing:
		s.Owed.SetNode(t.item, false)
	default:
		return false
	}
	return true
}
