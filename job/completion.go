package job

import (
	"context"
	"fmt"
	"time"

	"github.com/shardjob/shardjob/job/internal/completion"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/records"
	"github.com/shardjob/shardjob/regcenter"
)

// The completion stage of a fire (job/internal/completion) and the reading
// of records (job/internal/records): the runner's wiring of them, and the
// options that set them.

// cover is what an item's completed record says ran (fireplan.Cover).
type cover = fireplan.Cover

// record is an item's completed node as this instance last read or wrote
// it (records.Record): what it says ran, its version, the failed runs it
// lists.
type record = records.Record

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

// newCompleter returns the runner's completion stage: what it writes
// through, and the runner's answers it asks for.
func (r *runner) newCompleter(a *active) *completion.Completer {
	return completion.New(completion.Config{
		Center: r.rc, Paths: r.paths, Name: r.name, Server: r.serverID(), Log: r.log,
		Records: r.records, Reader: a.reader, Book: r.book, Owed: r.owed, Claims: a.fo, Backfills: &r.backfills,
		Journal: r.s.journal, Fence: a.elect,
		Keep: a.held.KeepAfter, Release: func(items []int) { a.firer.Release(items) },
		Ended:   func(sess *regcenter.Session, items []int) { r.afterEnded(a, sess, items) },
		Current: func() completion.Job { return r.config().fireJob().Done },
		Life:    a.record, SessionTimeout: r.sessionTimeout, Now: r.s.opts.now,
		Interval: r.s.opts.recordInterval, Closed: ErrSchedulerClosed, MaxItems: MaxShardingTotalCount,
	})
}

// completedFire returns the fire an item last completed (zero if none):
// its completed node, with what a record deferred here adds to it
// (records.Reader.Read).
func (r *runner) completedFire(ctx context.Context, item int) (time.Time, error) {
	rec, err := r.active().reader.Read(ctx, item, r.config().book.Schedule, r.records)
	return rec.Cover.Through(), err
}

// newReader returns the runner's records.Reader.
func (r *runner) newReader() *records.Reader {
	own := ""
	if r.s.journal != nil {
		own = r.s.journal.ID()
	}
	return &records.Reader{Center: r.rc, Paths: r.paths, Job: r.name, Own: own, Log: r.log, Report: r.reportBadValue}
}

// sweepJournals folds the completion journals of processes that crashed
// into the records of this scheduler's jobs (journal.Journal.Sweep).
func (s *Scheduler) sweepJournals(ctx context.Context) {
	if s.journal != nil {
		s.journal.Sweep(ctx, s.opts.journalSweep, s.opts.journalOrphanAge, s.jobSchedule)
	}
}

// jobSchedule is the schedule of job name, when this scheduler runs it and
// its schedule compiled.
func (s *Scheduler) jobSchedule(name string) (fireplan.Schedule, bool) {
	r := s.runner(name)
	if r == nil {
		return nil, false
	}
	sched := r.config().book.Schedule
	return sched, sched != nil
}
