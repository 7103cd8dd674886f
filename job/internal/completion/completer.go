package completion

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/shardjob/shardjob/internal/backfill"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/book"
	claims "github.com/shardjob/shardjob/job/internal/failover"
	"github.com/shardjob/shardjob/job/internal/journal"
	"github.com/shardjob/shardjob/job/internal/records"
	"github.com/shardjob/shardjob/regcenter"
)

// Result is what a run of one item hands forward to its completion: built
// by the runner as the run ends (or as it is settled, skipped or never
// started), and passed to the Completer, which writes what it says.
type Result struct {
	Item int
	// Fire is the fire the run stood for (a make-up run's first).
	Fire time.Time
	Kind book.Kind
	// Begin and End are when the run began and ended.
	Begin, End time.Time
	// Err is the run's failure (nil: it succeeded).
	Err error
	// Halted is non-nil when the run was cut short: not completed. Config.Closed
	// is the cause of one cut short by shutdown (handed over); any other is a
	// lost session's (owed here).
	Halted error
	// Settled: nothing ran, earlier runs had made up for every fire owed;
	// the completion cleans up (mark, misfire node, queue entry) but
	// records no completion of its own.
	Settled bool
	// Through is the latest fire the run stood for (see
	// ShardingContext.Through).
	Through time.Time
	// Prior is what the item's record said before this run: the
	// completion records it with this run added.
	Prior records.Record
	// FailedAttempts counts the attempts of Fire that failed before the
	// run was cut short (Config.Retry): a hand-over passes it on.
	FailedAttempts int
	// RetryNoted: the item's retry node may name Fire (written before a
	// retry's wait, here or by the owner whose count this run continued);
	// the completion of a run not cut short deletes it.
	RetryNoted bool
	// Backfill is the backfill request a KindBackfill run ran in: its
	// completion writes the item's progress (internal/backfill), over
	// BackfillVersion, the progress node's version read under the mark
	// (-1: unknown, any).
	Backfill        string
	BackfillVersion int32
}

// UpTo is the latest scheduled fire a run makes up for: its own fire, or
// for a misfire or failover run every fire due when its item was reserved
// (ShardingContext.Through; see book.Ran.UpTo).
func (b Result) UpTo() time.Time { return b.Ran().UpTo() }

// Ran is b as the book settles what it paid.
func (b Result) Ran() book.Ran {
	return book.Ran{Item: b.Item, Kind: b.Kind, Fire: b.Fire, Through: b.Through}
}

// Job is what a completion reads of its job's config, compiled once with
// the config.
type Job struct {
	// Book is the job as the book reads it; Book.Schedule is nil when the
	// schedule did not compile, and ScheduleErr then says why.
	Book        book.Job
	ScheduleErr error
	Unmonitored bool
	Failover    bool
	// RecordInterval is the job's own record interval (Config.RecordInterval).
	RecordInterval time.Duration
}

// Fencer gives the op that fails a transaction unless sess's generation
// still holds the job's election latch (election.Election.SessionFence);
// false when there is none.
type Fencer interface {
	SessionFence(sess *regcenter.Session) (regcenter.Op, bool)
}

// Config is what the Completer is given by the runner that makes it: the
// parts of the runner it writes through, and the few answers it asks for
// as funcs. It calls nothing else of the runner.
type Config struct {
	Center regcenter.Center
	Paths  layout.Job
	Name   string // the job's name
	Server string // this server's id, written in the records
	Log    *slog.Logger

	Records *records.Cache  // the records as known here
	Reader  *records.Reader // the records read from the registry
	Book    *book.Book      // settles what the runs paid (Paid, NoteMisfire)
	Owed    *book.Ledger    // the misfire nodes known here
	Claims  *claims.State   // the failover queue as seen here
	// Backfills is the job's backfill progress as known here: a backfill
	// run's completion notes what it wrote (nil: none noted).
	Backfills *backfill.Known
	// Journal is this process's completion journal; nil when off.
	Journal *journal.Journal
	// Fence leads a transaction that deletes the session's ephemeral nodes.
	Fence Fencer

	// Keep returns which of batch's items keep their running marks after
	// their runs under sess (the runner's held marks, hold.go); it notes
	// the others dropped. Called once per completion written, as it starts
	// (before it waits for an item's previous completion, if it does; the
	// halves of a split keep its answer), with no lock held.
	Keep func(sess *regcenter.Session, batch []Result) map[int]bool
	// Release ends the reservations of a batch's items once their
	// completion is written, or given up. It is the runner's: it starts
	// the runs that waited for them, on the runner's goroutines. Called on
	// the completing goroutine, after each batch, before the next one is
	// collected: a callback rather than what All returns, since a fire's
	// first batch is released while its later results are still coming.
	Release func(items []int)
	// Ended is told a batch's items whose completion was written once
	// sess's generation had ended, before they are released: their running
	// marks and claims, which no fence let it delete, are left for the
	// session's end, unless the session lives on under a later generation
	// (marks.Ended.AfterRun). Nil: nothing to tell.
	Ended func(sess *regcenter.Session, items []int)
	// Current returns the job's current config, for the flushes and reads
	// that are not a fire's.
	Current func() Job

	// Life bounds a fire's completion, its journal write included:
	// cancelled when stop has waited its last for background work.
	// (A flush is bounded by the context its caller gives.)
	Life context.Context
	// SessionTimeout is the registry's session timeout; a completion
	// waits ten of them (at least a minute) to be written.
	SessionTimeout func() time.Duration
	// Now is the scheduler's clock (records' ages, the interval's start).
	Now func() time.Time
	// Interval is the scheduler's record interval (WithRecordInterval).
	Interval time.Duration
	// Closed is the cause of a run cut short by shutdown
	// (job.ErrSchedulerClosed).
	Closed error
	// MaxItems is the most items a job has (job.MaxShardingTotalCount):
	// no transaction carries more.
	MaxItems int
}

// Completer is the completion stage of a job's fires on one instance: it
// receives the results of the runs and writes their completion.
type Completer struct {
	Config
}

// New returns the completion stage configured by c.
func New(c Config) *Completer { return &Completer{Config: c} }

// TxnBytes is what a completion transaction is filled to: as many items as
// fit, by the size per item of the job's last completion
// (records.Cache.ItemsPerTxn), and never more than Config.MaxItems. A
// steady fire of held items writes a record alone per item, about 200
// bytes: one transaction for some 4,000 items. One the registry still
// refuses as too large (a smaller regcenter.Config.MaxNodeBytes, or a size
// per item that grew) is split in two, and each half written (stepSplit).
const TxnBytes = regcenter.DefaultMaxNodeBytes * 7 / 8

// linger is how long a completion waits for one more result of its run
// before it commits what it has: items that end together share a
// transaction, and an item that ends alone waits this much longer for its
// completion mark (never for its next fire).
const linger = 2 * time.Millisecond

// All collects n results and writes their completion marks in group
// commits: a transaction carries every result that arrived while the
// previous one was in flight, or within linger of the one before, so a
// fire of many fast items costs a transaction per transaction's worth of
// items (records.Cache.ItemsPerTxn), not one per item.
func (s *Completer) All(sess *regcenter.Session, j Job, results <-chan Result, n int) {
	var timer *time.Timer // made once there is a second result to wait for
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	perTxn := 1
	if n > 1 {
		perTxn = s.Records.ItemsPerTxn(TxnBytes, s.MaxItems)
	}
	for received := 0; received < n; {
		batch := []Result{<-results}
		received++
	collect:
		for received < n && len(batch) < perTxn {
			if timer == nil {
				timer = time.NewTimer(linger)
			} else {
				timer.Reset(linger)
			}
			select {
			case res := <-results:
				batch = append(batch, res)
				received++
			case <-timer.C:
				break collect
			}
		}
		s.Complete(sess, j, batch)
	}
}

// Complete ends batch's runs: it writes their completion (a monitored
// job), notes the fires a lost session cut short as owed here, and
// releases the items (Config.Release).
func (s *Completer) Complete(sess *regcenter.Session, j Job, batch []Result) {
	items := make([]int, len(batch))
	for i, b := range batch {
		items[i] = b.Item
	}
	if !j.Unmonitored {
		s.writeCompletion(sess, j, batch, s.awaitPrevious(sess, j, batch))
		if sess.Err() != nil && s.Ended != nil {
			s.Ended(sess, items)
		}
	}
	for _, b := range batch {
		// Cut short by a lost session (not by shutdown): this instance
		// owes the fire a run once it is back. If the session really
		// expired, failover may run it elsewhere too: at least once, and
		// never at the same time (the running mark).
		if b.Halted != nil && !errors.Is(b.Halted, s.Closed) {
			s.Book.NoteMisfire(j.Book, b.Item, b.Fire)
		}
	}
	// It ran here: whoever ran it before is no reason to hold back from
	// its queued debt any more.
	s.Claims.Unblock(items)
	s.Release(items)
}

// awaitPrevious waits, for each of batch's runs that followed a run of
// its item whose completion was being written (book.Book.After), for that
// completion to end, and takes the item's record as it left it for the
// run's prior: the fires are recorded in their order, each completion
// adding to the last. The wait ends with the completion's own bound
// (Config.Life); an item whose previous completion was given up keeps the
// record as it was, that run's fires then looking unrun, as its warning
// says.
//
// Before it waits, it decides which items keep their marks (Config.Keep)
// and returns that, for the completion to use (nil when no run waits, the
// steady state: the completion asks then): the runs have returned, and
// the items' next fires may follow these runs in turn while they wait
// (noteWriting), on marks these completions will not delete.
func (s *Completer) awaitPrevious(sess *regcenter.Session, j Job, batch []Result) map[int]bool {
	var waits map[int]<-chan struct{} // by position in batch
	for i, b := range batch {
		if after := s.Book.After(b.Item, b.Fire); after != nil {
			if waits == nil {
				waits = map[int]<-chan struct{}{}
			}
			waits[i] = after
		}
	}
	if waits == nil {
		return nil
	}
	keep := decided(s.Keep(sess, batch))
	_, fenced := s.Fence.SessionFence(sess)
	s.noteWriting(j, batch, keep, fenced)
	for i, after := range waits {
		select {
		case <-after:
		case <-s.Life.Done():
			return keep
		}
		if rec, ok := s.Records.Lookup(batch[i].Item); ok {
			batch[i].Prior = rec
		}
	}
	return keep
}

// decided is keep as a decision made: none kept (nil) is an empty set, so
// that a completion handed it does not ask Config.Keep again.
func decided(keep map[int]bool) map[int]bool {
	if keep == nil {
		return map[int]bool{}
	}
	return keep
}

// readRecord reads item's completed node with what a record deferred here
// adds to it (records.Reader.Read), against the job's current schedule.
func (s *Completer) readRecord(ctx context.Context, item int) (records.Record, error) {
	return s.Reader.Read(ctx, item, s.Current().Book.Schedule, s.Records)
}

// readNode is readRecord without the records deferred here
// (records.Reader.Node).
func (s *Completer) readNode(ctx context.Context, item int) (records.Record, error) {
	return s.Reader.Node(ctx, item, s.Current().Book.Schedule)
}
