package job

import (
	"context"
	"errors"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/journal"
)

// The completion journal. With the default record interval, a completion
// of an item whose running mark this instance holds does not write the
// item's completed record: it puts what the record would say in this
// process's journal, one node for every job of the scheduler
// (/.journals/{process}, package journal), written as soon as no earlier write of it is in
// flight. The completions of one second's fires of all the jobs share
// one or two writes, and the records are written behind, once a journal
// record interval (recordflush.go), and before every release of a mark.
//
// A record written while its item is journalled names the journal
// (stored.Completed.Journal), and every read of a record that names another
// process's journal adds what that journal says of the item
// (records.Reader.Node): a crash leaves the record behind by up to an
// interval, but not the journal, so the next owner of the item, a
// failover claimer or a make-up run finds every completed fire, and runs
// again only what was in flight — a run, or a completion whose journal
// write had not returned. A record known here is proved current by its
// version alone only when it names no other process's journal
// (records.Cache.Provable).
//
// The journal of a process that crashed stays until some instance folds
// it: each instance looks, at most once per journal.Sweep, for journals
// not written for journal.OrphanAge, adds what each says to the records
// that still name it, and deletes it. A process deletes its own journal
// when it shuts down, after its last records are written.

// sweepJournals folds every journal that has not been written for
// journalOrphanAge into the records that name it, and deletes it: the
// journal of a process that crashed. At most once per journalSweep.
func (s *Scheduler) sweepJournals(ctx context.Context) {
	j := s.journal
	if j == nil || !j.SweepDue(s.opts.journalSweep) {
		return
	}
	ids, err := journal.List(ctx, s.rc)
	if err != nil {
		s.log.Debug("listing completion journals", "err", err)
		return
	}
	for _, id := range ids {
		if id == j.ID() {
			continue
		}
		if err := s.foldJournal(ctx, id); err != nil {
			s.log.Warn("folding a completion journal left by a process that is gone", "journal", id, "err", err)
		}
	}
}

// foldJournal folds journal id into the records of the scheduler's jobs
// that name it, and deletes it, if it has not been written for
// journalOrphanAge. Entries of jobs this scheduler does not run are
// folded by an instance that runs them; a journal is deleted only when
// every job it names is one of this scheduler's.
func (s *Scheduler) foldJournal(ctx context.Context, id string) error {
	o, ok, err := journal.ReadOrphan(ctx, s.rc, id, s.opts.journalOrphanAge)
	if err != nil || !ok {
		return err
	}
	all := true
	for name := range o.Doc.Jobs {
		r := s.runnerOf(name)
		if r == nil {
			all = false
			continue
		}
		sched, _, err := r.config().Schedule()
		if err != nil {
			all = false
			continue
		}
		for it, ran := range o.Doc.Items(name) {
			if err := r.foldEntry(ctx, sched, id, it, ran); err != nil {
				return err
			}
		}
	}
	if !all {
		return nil
	}
	return journal.DeleteOrphan(ctx, s.rc, o)
}

// foldEntry adds ran, journal id's entry for item, to the item's record
// when the record still names that journal.
func (r *runner) foldEntry(ctx context.Context, sched cron.Schedule, id string, item int, ran [][2]int64) error {
	return journal.Fold(ctx, r.rc, sched, r.paths.ItemNode(item, layout.Completed), id, item, ran)
}

// journalDeferred puts the records c deferred in the completion journal,
// and returns once a write of the journal carries them. When the journal
// cannot take them (full, or the write failed), their records are written
// now instead: a deferred completion is never left only in memory.
func (r *runner) journalDeferred(cfg *spec, c *completion) {
	if !c.journalled || len(c.deferred) == 0 {
		return
	}
	covers := make(map[int]cover, len(c.deferred))
	for i := range c.deferred {
		covers[c.batch[i].item] = c.recorded[i]
	}
	ctx, cancel := context.WithTimeout(r.ctx.record, max(time.Minute, 10*r.sessionTimeout()))
	defer cancel()
	err := r.s.journal.Put(ctx, r.serverID(), r.name, covers)
	if err == nil {
		return
	}
	r.log.Debug("completion journal not written; writing the records", "items", len(covers), "err", err)
	if ferr := r.flushRecords(ctx, func(item int, _ time.Time) bool { _, ok := covers[item]; return ok }, false); ferr != nil {
		r.log.Warn("writing completion records the journal could not take; the runs they cover may run again", "err", errors.Join(err, ferr))
	}
}

// journalCovered drops from the journal what the records c wrote list.
func (r *runner) journalCovered(c *completion) {
	through := map[int]time.Time{}
	for i, b := range c.batch {
		if _, deferred := c.deferred[i]; !deferred && !c.recorded[i].IsZero() {
			through[b.item] = c.recorded[i].Through()
		}
	}
	if len(through) > 0 {
		r.s.journal.Covered(r.name, through)
	}
}
