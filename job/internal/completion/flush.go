package completion

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/book"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/journal"
	"github.com/shardjob/shardjob/job/internal/records"
	"github.com/shardjob/shardjob/regcenter"
)

// Records written behind. While an item's mark is held here (package
// job's hold.go) no other instance runs it, and nothing another instance
// decides rests on its record being current: a new owner takes the item
// only after this instance releases the mark, and a failover claimer that
// meets the mark hands its claim back. So the completion of a held item
// whose record was written here less than the record interval ago
// (job.WithRecordInterval) writes nothing: it keeps the record it would
// have written (pending) and this instance's own readers add it to what
// they read (records.Reader.Read). The record is written
//
//   - by the first completion of the item after the interval (so a steady
//     one-second job writes its record once every interval, not every run),
//   - before the item's mark is released (FlushReleased), in every release:
//     a reshard that moves it, a fire that finds it unassigned, a stop,
//   - when a new session begins, before the jobs register again,
//   - by the reconcile round for items whose record has waited an interval
//     (a job paused, or whose fires stopped),
//   - at stop, whatever is left.
//
// What it costs: a crash, or a session lost for good, leaves the runs of
// the last interval unrecorded, and the item's next owner makes them up —
// one run of the item covering them (docs/guarantees.md). Records read by
// others (shardjob status, the console, another scheduler's jobs) are up to
// an interval behind. A job that another job on this scheduler runs after
// (Config.After) writes its records at every run: its dependents wait on
// them. An unmonitored job writes none.

// recordInterval is how long a completion of j's job may defer a held
// item's record after the last one written (0: never), and whether the
// deferred completions go to the completion journal (journal.go): the
// job's own opt-in, else the scheduler's, both unjournalled; else the
// journal's interval.
func (s *Completer) recordInterval(j Job) (every time.Duration, journalled bool) {
	switch {
	case j.Unmonitored || s.Records.Awaited():
		return 0, false
	case j.RecordInterval > 0:
		return j.RecordInterval, false
	case s.Interval > 0:
		return s.Interval, false
	case s.Journal != nil:
		return journal.RecordInterval, true
	}
	return 0, false
}

// defers reports whether c's completion of b keeps its record pending
// instead of writing it: a regular fire's run, ended, of an item whose
// mark stays held, on the fenced path, over a record whose version is
// known and that was written here less than an interval ago.
func (s *Completer) defers(c *completion, b Result) bool {
	return c.every > 0 && c.fenced && c.keep[b.Item] && b.Kind == book.Fire && b.Halted == nil &&
		b.Prior.Versioned && c.completedVersion == nil && !c.reread[b.Item] &&
		s.Records.Recent(b.Item, c.now, c.every)
}

// FlushAll writes every deferred record.
func (s *Completer) FlushAll(ctx context.Context) {
	if !s.Records.HasPending() {
		return
	}
	if err := s.Flush(ctx, nil, true); err != nil {
		s.Log.Warn("writing deferred completion records; the runs they cover may run again", "err", err)
	}
}

// FlushStale writes the deferred records that have waited an interval:
// their items' fires have not come back to write them.
func (s *Completer) FlushStale(ctx context.Context) {
	if !s.Records.HasPending() {
		return
	}
	every, _ := s.recordInterval(s.Current())
	now := s.Now()
	err := s.Flush(ctx, func(_ int, written time.Time) bool { return now.Sub(written) >= every }, false)
	if err != nil {
		s.Log.Warn("writing deferred completion records", "err", err)
	}
}

// Flush writes the deferred records pick selects (all when nil), in
// transactions of as many as fit, each over the version last known; a
// record another instance wrote meanwhile is read and added to. With
// release, the items leave this instance (their marks go next): the
// records name no completion journal, whose entries they now list, so
// that their next readers read no journal.
func (s *Completer) Flush(ctx context.Context, pick func(item int, written time.Time) bool, release bool) error {
	ps := s.Records.PendingOf(pick)
	if len(ps) == 0 {
		return nil
	}
	j := s.Current()
	if j.Book.Schedule == nil {
		return j.ScheduleErr
	}
	sched := j.Book.Schedule
	per := s.Records.ItemsPerTxn(TxnBytes, s.MaxItems)
	var errs []error
	for start := 0; start < len(ps); start += per {
		if err := s.flushChunk(ctx, sched, ps[start:min(start+per, len(ps))], release); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// flushChunk writes ps's records in one transaction, correcting a version
// or existence that moved and trying again; one too large is split.
func (s *Completer) flushChunk(ctx context.Context, sched fireplan.Schedule, ps []records.Pending, release bool) error {
	covers := make([]fireplan.Cover, len(ps))
	versions := make([]int32, len(ps))
	create := make([]bool, len(ps))
	// The journal each record names: this process's, which the deferred
	// completions went to, or none once the item leaves; and another
	// process's, when the node read after a moved version names it: that
	// process has held the item since, and may journal its completions
	// there still (records.Reader.Names).
	journals := make([]string, len(ps))
	for i, p := range ps {
		covers[i], versions[i] = p.Cover, p.Version
		if !release {
			journals[i] = p.Mark.Journal
		}
	}
	delay := 50 * time.Millisecond
	for attempt := 0; attempt < 8+len(ps); {
		ops := make([]regcenter.Op, len(ps))
		for i, p := range ps {
			m := p.Mark
			m.Fire, m.Ran, m.Journal = covers[i].Through().UnixMilli(), covers[i].Ran(), journals[i]
			path := s.Paths.ItemNode(p.Item, layout.Completed)
			if create[i] {
				ops[i] = regcenter.CreateOp{Path: path, Data: m.Marshal()}
			} else {
				ops[i] = regcenter.SetOp{Path: path, Data: m.Marshal(), Version: versions[i]}
			}
		}
		err := s.Center.Multi(ctx, ops...)
		if s.Log.Enabled(ctx, slog.LevelDebug) {
			for i, p := range ps {
				s.Log.Debug("record flush", "item", p.Item, "over_version", versions[i], "create", create[i], "journal", journals[i],
					"release", release, "through", covers[i].Through(), "err", err)
			}
		}
		if err == nil {
			at := s.Now()
			for i, p := range ps {
				to := versions[i] + 1
				if create[i] {
					to = 0
				}
				s.Records.Flushed(p, covers[i], versions[i], to, at, journals[i], s.Reader.Foreign(journals[i]))
			}
			if s.Journal != nil {
				through := make(map[int]time.Time, len(ps))
				for i, p := range ps {
					through[p.Item] = covers[i].Through()
				}
				s.Journal.Covered(s.Name, through)
			}
			return nil
		}
		var me *regcenter.MultiError
		switch {
		case errors.Is(err, regcenter.ErrTooLarge) && len(ps) > 1:
			half := len(ps) / 2
			return errors.Join(s.flushChunk(ctx, sched, ps[:half], release), s.flushChunk(ctx, sched, ps[half:], release))
		case errors.As(err, &me) && me.Index >= 0 && me.Index < len(ps) &&
			(errors.Is(me.Err, regcenter.ErrBadVersion) || errors.Is(me.Err, regcenter.ErrNoNode) || errors.Is(me.Err, regcenter.ErrNodeExists)):
			// Written meanwhile (or removed): add to what is there.
			attempt++
			i := me.Index
			rec, rerr := s.readNode(ctx, ps[i].Item)
			if rerr != nil {
				err = rerr
				break
			}
			covers[i] = covers[i].Union(sched, rec.Cover)
			versions[i], create[i] = rec.Version, !rec.Versioned
			if rec.Foreign {
				journals[i] = rec.Journal
			}
			continue
		case errors.Is(err, regcenter.ErrConnectionLoss), errors.Is(err, regcenter.ErrSessionLost):
			// Wait it out: a replayed write that landed is met as a moved
			// version, and read.
		default:
			return fmt.Errorf("writing the records of items %s: %w", itemsOf(ps), err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("writing the records of items %s: %w", itemsOf(ps), errors.Join(err, ctx.Err()))
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
	return fmt.Errorf("writing the records of items %s: gave up after %d attempts", itemsOf(ps), 8+len(ps))
}

// FlushReleased writes the deferred records of the items released says
// this instance gives up.
func (s *Completer) FlushReleased(ctx context.Context, released func(int) bool) {
	if err := s.Flush(ctx, func(it int, _ time.Time) bool { return released(it) }, true); err != nil {
		s.Log.Warn("writing deferred completion records before releasing their marks; the runs they cover may run again", "err", err)
	}
}

// itemsOf is ps's items as layout formats them.
func itemsOf(ps []records.Pending) string {
	items := make([]int, len(ps))
	for i, p := range ps {
		items[i] = p.Item
	}
	return layout.FormatItems(items)
}
