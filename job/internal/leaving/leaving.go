// Package leaving holds this instance's leave of a job as its stop does
// it: the leave's transaction (registration.Leave) with the runs this
// instance owes for the items it held handed to the failover queue in it,
// the book told what the leave gave up and handed over, the load table's
// entry repaired after it; and, once the runs here have ended, the runs
// still owed for those items handed over too. Package job's stop decides
// whether the job leaves (registered under a live session), whether it
// flags a reshard (not when the job was removed from the cluster) and
// whether it hands runs over (failover on), and in which order the leave,
// the wait for the runs and the rest of its shutdown go.
//
// It owns no state of its own: what is owed is the book's, the disabled
// items and the pause flag the flags', the registry's nodes those of the
// registration and of the failover queue. It calls those rooms, the
// leave's transaction of job/internal/registration and the repair it is
// given (reshard.Resharder.Repair), never the runner, and starts nothing.
//
// It may import the standard library, regcenter, internal/layout, package
// failover (the queue), job/internal/book, job/internal/flags,
// job/internal/registration and job/internal/fireplan; nothing of
// package job.
package leaving

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/shardjob/shardjob/failover"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/book"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/flags"
	"github.com/shardjob/shardjob/job/internal/registration"
	"github.com/shardjob/shardjob/regcenter"
)

// Leaver leaves one job on this instance. Its fields are set once, before
// its first use.
type Leaver struct {
	RC     regcenter.Center
	Paths  layout.Job
	Job    string
	Server string
	Book   *book.Book   // what is owed here, and what the leave gave up
	Flags  *flags.Flags // the disabled items and the pause flag, as owed runs are counted
	// Repair makes the job's entry in the load table what its nodes say
	// (reshard.Resharder.Repair).
	Repair func(ctx context.Context) error
	// BooksBehind reports whether this instance, leading, cleared a
	// departed server's assignment and no reshard or repair here committed
	// since (reshard.Resharder.BooksBehind): the leave repairs the books
	// then too, holding nothing itself.
	BooksBehind func() bool
	Now         func() time.Time
	Log         *slog.Logger
}

// Leave removes this instance from the job in one transaction
// (registration.Leave): its status goes, its assignment is cleared, a
// reshard is flagged with flagReshard, and — with handOver — the runs it
// owes go to the failover queue: misfires, fires missed while
// disconnected, and the schedule's latest fire before now for every held
// item that no fire here has taken yet (a fire in flight when the stop
// began). Every fire of the schedule up to now was this instance's to run
// for the items it holds; later fires belong to whoever holds them next.
// The book is told what the leave gave up and handed over. When it gave
// up items and flagged a reshard, the load table's entry is repaired at
// once (a failure logged): it says so now, not at the job's next fire
// (and not never, when no other instance runs the job). So it is when the
// books are behind a departure this instance cleared (the stop came
// before the reshard that would have told the table).
func (l *Leaver) Leave(ctx context.Context, job book.Job, flagReshard, handOver bool) error {
	var upTo time.Time
	if job.Schedule != nil {
		upTo = fireplan.Prev(job.Schedule, l.Now())
	}
	lv := registration.Leaving{RC: l.RC, Paths: l.Paths, Job: l.Job, Server: l.Server, FlagReshard: flagReshard}
	var owed []book.Owed
	if handOver {
		lv.HandOver = func(held []int) []failover.Entry {
			owed = l.Book.OwedRuns(job, held, upTo, l.Flags.DisabledItems(), l.Flags.Paused())
			return l.entries(owed)
		}
	}
	held, _, err := registration.Leave(ctx, lv)
	if err != nil {
		return err
	}
	l.Book.Left(held, owed)
	l.Log.Info("left the job", "handed_over", len(owed))
	if flagReshard && (l.Book.HeldAtLeaveAny() || l.BooksBehind != nil && l.BooksBehind()) {
		if err := l.Repair(ctx); err != nil {
			l.Log.Warn("repairing the load table's books after leaving", "err", err)
		}
	}
	return nil
}

// HandOverRest hands the runs still owed for the items the leave gave up
// (book.Book.HandOverRest: to items that were busy when this instance
// left, or noted by fires in flight) to the failover queue, once the runs
// here have ended. The book forgets every debt, handed over or not.
func (l *Leaver) HandOverRest(ctx context.Context, job book.Job) error {
	owed := l.entries(l.Book.HandOverRest(job, l.Flags.DisabledItems(), l.Flags.Paused()))
	if len(owed) == 0 {
		return nil
	}
	if err := failover.NewQueue(l.RC, l.Job).Enqueue(ctx, owed); err != nil {
		return fmt.Errorf("handing owed runs over: %w", err)
	}
	l.Log.Info("handed owed runs over", "items", len(owed))
	return nil
}

// entries are owed as failover queue entries from this instance.
func (l *Leaver) entries(owed []book.Owed) []failover.Entry {
	entries := make([]failover.Entry, len(owed))
	for i, o := range owed {
		entries[i] = failover.Entry{Item: o.Item, Fire: o.Since.UnixMilli(), From: l.Server}
	}
	return entries
}
