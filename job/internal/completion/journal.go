package completion

import (
	"context"
	"errors"
	"time"

	"github.com/shardjob/shardjob/job/internal/fireplan"
)

// The completion journal. With the default record interval, a completion
// of an item whose running mark this instance holds does not write the
// item's completed record: it puts what the record would say in this
// process's journal, one node for every job of the scheduler
// (/.journals/{process}, package journal), written as soon as no earlier write of it is in
// flight. The completions of one second's fires of all the jobs share
// one or two writes, and the records are written behind, once a journal
// record interval (flush.go), and before every release of a mark.
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

// journalDeferred puts the records c deferred in the completion journal,
// and returns once a write of the journal carries them. When the journal
// cannot take them (full, or the write failed), their records are written
// now instead: a deferred completion is never left only in memory.
func (s *Completer) journalDeferred(j Job, c *completion) {
	if !c.journalled || len(c.deferred) == 0 {
		return
	}
	covers := make(map[int]fireplan.Cover, len(c.deferred))
	for i := range c.deferred {
		covers[c.batch[i].Item] = c.recorded[i]
	}
	// The wait is bounded by the write it waits for (journal.Journal.Put):
	// the completion's own bound is the write's, made only by the put
	// that leads one, not a timer for every completion.
	bound := max(time.Minute, 10*s.SessionTimeout())
	err := s.Journal.Put(s.Life, bound, s.Server, s.Name, covers)
	if err == nil {
		return
	}
	s.Log.Debug("completion journal not written; writing the records", "items", len(covers), "err", err)
	ctx, cancel := context.WithTimeout(s.Life, bound)
	defer cancel()
	if ferr := s.Flush(ctx, func(item int, _ time.Time) bool { _, ok := covers[item]; return ok }, false); ferr != nil {
		s.Log.Warn("writing completion records the journal could not take; the runs they cover may run again", "err", errors.Join(err, ferr))
	}
}

// journalCovered drops from the journal what the records c wrote list.
func (s *Completer) journalCovered(c *completion) {
	through := map[int]time.Time{}
	for i, b := range c.batch {
		if _, deferred := c.deferred[i]; !deferred && !c.recorded[i].IsZero() {
			through[b.Item] = c.recorded[i].Through()
		}
	}
	if len(through) > 0 {
		s.Journal.Covered(s.Name, through)
	}
}
