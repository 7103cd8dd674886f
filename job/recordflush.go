package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/journal"
	"github.com/shardjob/shardjob/job/internal/records"
	"github.com/shardjob/shardjob/regcenter"
)

// Records written behind. While an item's mark is held here (hold.go) no
// other instance runs it, and nothing another instance decides rests on
// its record being current: a new owner takes the item only after this
// instance releases the mark, and a failover claimer that meets the mark
// hands its claim back. So the completion of a held item whose record was
// written here less than the record interval ago (WithRecordInterval)
// writes nothing: it keeps the record it would have written (pending) and
// this instance's own readers add it to what they read (readRecord). The
// record is written
//
//   - by the first completion of the item after the interval (so a steady
//     one-second job writes its record once every interval, not every run),
//   - before the item's mark is released (releaseHolds), in every release:
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

// DefaultRecordInterval is the record interval of a job that sets none
// (Config.RecordInterval) on a scheduler without WithRecordInterval: 0, no
// opt-in: every completion is in the registry when it returns (its record,
// or the completion journal: journal.go), so that a crash runs again only
// the runs in flight.
const DefaultRecordInterval time.Duration = 0

// MaxRecordInterval bounds Config.RecordInterval and WithRecordInterval:
// the runs a crash leaves unrecorded are those of the last interval.
const MaxRecordInterval = 10 * time.Minute

// WithRecordInterval opts every job of this scheduler that sets no
// Config.RecordInterval of its own into records written behind: the
// completed record of an item whose running mark this instance holds is
// written at most once per d; the runs in between keep theirs here and
// write nothing to the registry. It gives up ElasticJob's promise for all
// of them: a crash leaves up to d of an item's completed runs unrecorded,
// and their next owner runs them again in one make-up run. Prefer the
// per-job Config.RecordInterval, on the jobs whose runs are idempotent.
// Default DefaultRecordInterval (0: every completion recorded); at most
// MaxRecordInterval.
func WithRecordInterval(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 || d > MaxRecordInterval {
			return fmt.Errorf("%w: record interval %v must be between 0 and %v", ErrInvalidOption, d, MaxRecordInterval)
		}
		o.recordInterval = d
		return nil
	}
}

// recordInterval is how long a completion of cfg's job may defer a held
// item's record after the last one written (0: never), and whether the
// deferred completions go to the completion journal (journal.go): the
// job's own opt-in, else the scheduler's, both unjournalled; else the
// journal's interval.
func (r *runner) recordInterval(cfg *spec) (every time.Duration, journalled bool) {
	switch {
	case cfg.Unmonitored || r.records.Awaited():
		return 0, false
	case cfg.RecordInterval > 0:
		return cfg.RecordInterval, false
	case r.s.opts.recordInterval > 0:
		return r.s.opts.recordInterval, false
	case r.s.journal != nil:
		return journal.RecordInterval, true
	}
	return 0, false
}

// WithCompletionJournal turns the completion journal (on by default) off
// or on. Off, every completion of a job that opts into no record interval
// writes its item's record, one write operation per run, as before the
// journal; on, the completions of a second's fires of all the jobs share
// one write of this process's journal (see docs/design.md). Either way a
// completed fire is not run again after a crash.
func WithCompletionJournal(on bool) Option {
	return func(o *options) error {
		o.noJournal = !on
		return nil
	}
}

// defers reports whether c's completion of b keeps its record pending
// instead of writing it: a regular fire's run, ended, of an item whose
// mark stays held, on the fenced path, over a record whose version is
// known and that was written here less than an interval ago.
func (r *runner) defers(c *completion, b itemResult) bool {
	return c.every > 0 && c.fenced && c.keep[b.item] && b.kind == KindFire && b.halted == nil &&
		b.prior.Versioned && c.completedVersion == nil && !c.reread[b.item] &&
		r.records.Recent(b.item, c.now, c.every)
}

// flushAll writes every deferred record.
func (r *runner) flushAll(ctx context.Context) {
	if !r.records.HasPending() {
		return
	}
	if err := r.flushRecords(ctx, nil, true); err != nil {
		r.log.Warn("writing deferred completion records; the runs they cover may run again", "err", err)
	}
}

// flushStale writes the deferred records that have waited an interval:
// their items' fires have not come back to write them.
func (r *runner) flushStale(ctx context.Context) {
	if !r.records.HasPending() {
		return
	}
	every, _ := r.recordInterval(r.config())
	now := r.s.opts.now()
	err := r.flushRecords(ctx, func(_ int, written time.Time) bool { return now.Sub(written) >= every }, false)
	if err != nil {
		r.log.Warn("writing deferred completion records", "err", err)
	}
}

// flushRecords writes the deferred records pick selects (all when nil), in
// transactions of as many as fit, each over the version last known; a
// record another instance wrote meanwhile is read and added to. With
// release, the items leave this instance (their marks go next): the
// records name no completion journal, whose entries they now list, so
// that their next readers read no journal.
func (r *runner) flushRecords(ctx context.Context, pick func(item int, written time.Time) bool, release bool) error {
	ps := r.records.PendingOf(pick)
	if len(ps) == 0 {
		return nil
	}
	sched, _, err := r.config().Schedule()
	if err != nil {
		return err
	}
	per := r.records.ItemsPerTxn(completionBytes, completionsPerTxn)
	var errs []error
	for start := 0; start < len(ps); start += per {
		if err := r.flushChunk(ctx, sched, ps[start:min(start+per, len(ps))], release); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// flushChunk writes ps's records in one transaction, correcting a version
// or existence that moved and trying again; one too large is split.
func (r *runner) flushChunk(ctx context.Context, sched cron.Schedule, ps []records.Pending, release bool) error {
	covers := make([]cover, len(ps))
	versions := make([]int32, len(ps))
	create := make([]bool, len(ps))
	// The journal each record names: this process's, which the deferred
	// completions went to, or none once the item leaves; and another
	// process's, when the node read after a moved version names it: that
	// process has held the item since, and may journal its completions
	// there still (recordJournal).
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
			path := r.paths.ItemNode(p.Item, layout.Completed)
			if create[i] {
				ops[i] = regcenter.CreateOp{Path: path, Data: m.Marshal()}
			} else {
				ops[i] = regcenter.SetOp{Path: path, Data: m.Marshal(), Version: versions[i]}
			}
		}
		err := r.rc.Multi(ctx, ops...)
		if r.log.Enabled(ctx, slog.LevelDebug) {
			for i, p := range ps {
				r.log.Debug("record flush", "item", p.Item, "over_version", versions[i], "create", create[i], "journal", journals[i],
					"release", release, "through", covers[i].Through(), "err", err)
			}
		}
		if err == nil {
			at := r.s.opts.now()
			for i, p := range ps {
				to := versions[i] + 1
				if create[i] {
					to = 0
				}
				r.records.Flushed(p, covers[i], versions[i], to, at, journals[i], r.foreignJournal(journals[i]))
			}
			if r.s.journal != nil {
				through := make(map[int]time.Time, len(ps))
				for i, p := range ps {
					through[p.Item] = covers[i].Through()
				}
				r.s.journal.Covered(r.name, through)
			}
			return nil
		}
		var me *regcenter.MultiError
		switch {
		case errors.Is(err, regcenter.ErrTooLarge) && len(ps) > 1:
			half := len(ps) / 2
			return errors.Join(r.flushChunk(ctx, sched, ps[:half], release), r.flushChunk(ctx, sched, ps[half:], release))
		case errors.As(err, &me) && me.Index >= 0 && me.Index < len(ps) &&
			(errors.Is(me.Err, regcenter.ErrBadVersion) || errors.Is(me.Err, regcenter.ErrNoNode) || errors.Is(me.Err, regcenter.ErrNodeExists)):
			// Written meanwhile (or removed): add to what is there.
			attempt++
			i := me.Index
			rec, rerr := r.readRecordNode(ctx, ps[i].Item)
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

// itemsOf is ps's items as layout formats them.
func itemsOf(ps []records.Pending) string {
	items := make([]int, len(ps))
	for i, p := range ps {
		items[i] = p.Item
	}
	return layout.FormatItems(items)
}
