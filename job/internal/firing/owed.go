package firing

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/book"
	"github.com/shardjob/shardjob/regcenter"
)

// Owed runs: the misfire ledger of this instance (items owed a run since a
// fire they missed), the make-up runs that pay it, and what a release
// starts. The registry work (the narrowing's reads and decisions, the
// misfire nodes) is job/internal/makeup's; the fire order, the runs and
// the watch on a mark held elsewhere are here.

// oweRemote records that item missed the fire at because another
// instance (or an earlier fire) still runs it (makeup.Debts.OweRemote),
// and arranges to run it once when that execution ends.
func (fr *Firer) oweRemote(ctx context.Context, item int, at time.Time) {
	if !fr.Debts.OweRemote(ctx, fr.Current().Book, item, at) {
		return
	}
	running := fr.Paths.ItemNode(item, layout.Running)
	// The item is tried again when the mark goes, not at every fire
	// meanwhile (RunOwed skips items with a wait): the wait ends first.
	ended := func() {
		fr.Book.EndRemoteWait(item)
		fr.RunOwed(fr.RC.Session())
	}
	if cancel := fr.Claimer.Watch(running, ended); !fr.Book.WaitRemote(item, cancel) {
		cancel()
	}
}

// RunOwed runs, once each, the items owed a misfire that are not running
// here now, reserved in turn after the fires dispatched before
// (takeDebtsInTurn); owing nothing, it takes no turn.
func (fr *Firer) RunOwed(sess *regcenter.Session) {
	// Each item is tried once per call: one still running elsewhere is
	// owed again and retried when its mark goes (a watch), not in a loop.
	var tried map[int]bool
	for {
		j := fr.Current()
		if j.PausedUntil.After(fr.Now()) {
			// A pause holds every run of the job, owed ones too: they stay
			// owed, and the first fire after the pause pays them.
			return
		}
		if !fr.Owed.Owing() {
			return // the steady state: no turn of the fire order taken
		}
		if tried == nil {
			tried = map[int]bool{}
		}
		debts, ok := fr.takeDebtsInTurn(sess, j, tried)
		if !ok || len(debts) == 0 {
			return
		}
		fr.RunMakeUps(sess, j, debts, "running misfired items")
	}
}

// takeDebtsInTurn takes the debts to run now (Book.TakeDebts) in a turn of
// the fire order, after the scheduled fires dispatched before it. A
// make-up run stands for every fire dispatched by now; reserved while one
// of them still waited for its turn (behind a fire slow in coordination),
// and narrowed by a record listing a fire another instance ran, it left
// that fire a debt of later fires only (Narrow's rest), which the fire
// paid as a plain fire — running what the record listed again — if it
// reserved before the debt's own run. Reserved after the fires before
// it, the debt is theirs to make up, narrowed by the record.
func (fr *Firer) takeDebtsInTurn(sess *regcenter.Session, j *Job, tried map[int]bool) (map[time.Time][]int, bool) {
	turn := fr.Order.Enter()
	defer fr.Order.Leave(turn)
	fr.Order.AwaitDue(turn, fr.Life.Done())
	release := fr.Order.Hold()
	defer release()
	return fr.Book.TakeDebts(sess, j.Book, tried, fr.Flags.DisabledItems)
}

// Release frees items run here, and starts what waited for them: a
// backfill fire, a queued trigger, the runs they are owed, the failover
// queue.
func (fr *Firer) Release(items []int) {
	// A failover run ended (or gave its claim back): its claim goes
	// before the item is free, so that a claim made once it is free is
	// not the one dropped.
	fr.Queue.Unclaim(items)
	_, owed, trig := fr.Book.Release(items)
	// A backfill fire waiting for these items takes them first: the
	// schedule's make-up run, which stands for every fire it owes, runs
	// once the backfill run released them.
	fr.BackfillWait.Hand(items)
	dirty := fr.Queue.Dirty()
	if trig {
		fr.Go(fr.Triggered)
	}
	switch {
	case owed && dirty:
		// Queued debts first: the instance that runs an item pays the
		// item's failover entry before its own next misfire run, which
		// would otherwise re-mark the item and keep claimers off forever.
		fr.Go(fr.payQueuedThenOwed)
	case owed:
		// A fire that found these items busy owes them a run now.
		fr.Go(fr.PayOwed)
	case dirty:
		fr.KickFailover()
	}
}

// payQueuedThenOwed claims the failover queue's items for this instance,
// then runs what this instance owes: a task Release hands to a goroutine
// of the runner, not a step of the fire that released.
func (fr *Firer) payQueuedThenOwed() {
	fr.ClaimFailover()
	fr.PayOwed()
}

// PayOwed runs what this instance owes, under the current session.
func (fr *Firer) PayOwed() { fr.RunOwed(fr.RC.Session()) }

// RunMakeUps runs each group of items, reserved here, as a make-up run
// since its fire, the groups concurrently, and returns when all have ended.
func (fr *Firer) RunMakeUps(sess *regcenter.Session, j *Job, debts map[time.Time][]int, msg string) {
	var wg sync.WaitGroup
	for since, items := range debts {
		slices.Sort(items)
		fr.Log.Info(msg, "items", items, "since", since)
		wg.Go(func() { // owned here: waited for below
			fr.MarkAndRun(&Fire{Sess: sess, Job: j, At: since, Kind: book.Misfire, Items: items,
				MayHaveRun: fr.Inherit.Take(items), FailedAttempts: fr.Inherit.FailedOf(items)})
		})
	}
	wg.Wait()
}
