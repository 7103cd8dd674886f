package job

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/book"
	"github.com/shardjob/shardjob/job/internal/makeup"
	"github.com/shardjob/shardjob/regcenter"
)

// Owed runs: the misfire ledger of this instance (items owed a run since a
// fire they missed), the make-up runs that pay it, and the narrowing of a
// make-up run to the fires the item's record does not list. The registry
// work (the narrowing's reads and decisions, the misfire nodes) is
// job/internal/makeup's; the fire order, the runs and the watch on a mark
// held elsewhere stay here.

// newDebts returns the runner's registry work of make-up runs.
func (r *runner) newDebts() *makeup.Debts {
	return &makeup.Debts{RC: r.rc, Paths: r.paths, Book: r.book, Records: r.reader, Known: r.records, Log: r.log}
}

// owesMisfireRemote records that item missed the fire at because another
// instance (or an earlier fire) still runs it (makeup.Debts.OweRemote),
// and arranges to run it once when that execution ends.
func (r *runner) owesMisfireRemote(ctx context.Context, item int, at time.Time) {
	if !r.debts.OweRemote(ctx, r.config().book, item, at) {
		return
	}
	running := r.paths.ItemNode(item, layout.Running)
	// The item is tried again when the mark goes, not at every fire
	// meanwhile (runOwed skips items with a wait): the wait ends first.
	ended := func() {
		r.book.EndRemoteWait(item)
		r.runOwed(r.rc.Session())
	}
	if cancel := r.onGone(running, ended); !r.book.WaitRemote(item, cancel) {
		cancel()
	}
}

// runOwed runs, once each, the items owed a misfire that are not
// running here now, reserved in turn after the fires dispatched before
// (takeDebtsInTurn); owing nothing, it takes no turn.
func (r *runner) runOwed(sess *regcenter.Session) {
	// Each item is tried once per call: one still running elsewhere is
	// owed again and retried when its mark goes (a watch), not in a loop.
	var tried map[int]bool
	for {
		cfg := r.config()
		if cfg.PausedUntil.After(r.s.opts.now()) {
			// A pause holds every run of the job, owed ones too: they stay
			// owed, and the first fire after the pause pays them.
			return
		}
		if !r.owed.Owing() {
			return // the steady state: no turn of the fire order taken
		}
		if tried == nil {
			tried = map[int]bool{}
		}
		debts, ok := r.takeDebtsInTurn(sess, cfg, tried)
		if !ok {
			return
		}
		if len(debts) == 0 {
			return
		}
		r.runMakeUps(sess, cfg, debts, "running misfired items")
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
func (r *runner) takeDebtsInTurn(sess *regcenter.Session, cfg *spec, tried map[int]bool) (map[time.Time][]int, bool) {
	turn := r.order.Enter()
	defer r.order.Leave(turn)
	r.order.AwaitDue(turn, r.ctx.life.Done())
	release := r.order.Hold()
	defer release()
	return r.book.TakeDebts(sess, cfg.book, tried, r.flags.DisabledItems)
}

// release frees items run here, and starts what waited for them: a
// queued trigger, the runs they are owed, the failover queue.
func (r *runner) release(items []int) {
	// A failover run ended (or gave its claim back): its claim goes
	// before the item is free, so that a claim made once it is free is
	// not the one dropped.
	r.fo.Unclaim(items)
	_, owed, trig := r.book.Release(items)
	// A backfill fire waiting for these items takes them first: the
	// schedule's make-up run, which stands for every fire it owes, runs
	// once the backfill run released them.
	r.handBackfill(items)
	dirty := r.fo.Dirty()
	if trig {
		r.goFunc(r.fireTriggered)
	}
	switch {
	case owed && dirty:
		// Queued debts first: the instance that runs an item pays the
		// item's failover entry before its own next misfire run, which
		// would otherwise re-mark the item and keep claimers off forever.
		r.goFunc(r.payQueuedThenOwed)
	case owed:
		// A fire that found these items busy owes them a run now.
		r.goFunc(r.payOwed)
	case dirty:
		r.kick.failover.Kick()
	}
}

// payQueuedThenOwed claims the failover queue's items for this instance,
// then runs what this instance owes: a task release hands to a goroutine
// of the runner, not a step of the fire that released.
func (r *runner) payQueuedThenOwed() {
	r.claimFailover()
	r.payOwed()
}

// payOwed runs what this instance owes, under the current session.
func (r *runner) payOwed() { r.runOwed(r.rc.Session()) }

// runMakeUps runs each group of items, reserved here, as a make-up run
// since its fire, the groups concurrently, and returns when all have ended.
func (r *runner) runMakeUps(sess *regcenter.Session, cfg *spec, debts map[time.Time][]int, msg string) {
	var wg sync.WaitGroup
	for since, items := range debts {
		slices.Sort(items)
		r.log.Info(msg, "items", items, "since", since)
		wg.Add(1)
		go func() { // owned here: waited for below
			defer wg.Done()
			r.markAndRun(&fire{Sess: sess, Job: &cfg.fire, At: since, Kind: book.Misfire, Items: items,
				MayHaveRun: r.inherit.Take(items), FailedAttempts: r.inherit.TakeFailed(items)})
		}()
	}
	wg.Wait()
}
