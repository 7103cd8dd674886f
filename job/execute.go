package job

import (
	"context"
	"time"

	"github.com/shardjob/shardjob/job/internal/book"
	"github.com/shardjob/shardjob/job/internal/completion"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/firing"
	"github.com/shardjob/shardjob/job/internal/marks"
	"github.com/shardjob/shardjob/regcenter"
)

// The execute stage: items reserved and marked run concurrently, each in
// its own goroutine, and their results go to the Completer (job/internal/completion).

// fire is one fire's run on this instance as it passes from stage to
// stage (job/internal/firing).
type fire = firing.Fire

// reserveAndRun reserves f's items here (the ones free), then marks and
// runs them: the path of a fire whose items nothing reserved before it (a
// trigger).
func (r *runner) reserveAndRun(f *fire) {
	f.Job = &r.config().fire
	f.Items = r.book.Reserve(f.Job.Book, f.Items, f.At, time.Time{}, f.Kind, r.flags.DisabledItems())
	r.markAndRun(f)
}

// markAndRun marks f's items, reserved here, running (a monitored job),
// then runs and completes them.
func (r *runner) markAndRun(f *fire) {
	if len(f.Items) == 0 {
		return
	}
	var records map[int]record
	if !f.Job.Unmonitored && !r.allHeld(f) {
		ctx, cancel := r.coordCtx(f.Sess)
		// A make-up run proves what this instance knows of its items'
		// records while it marks them, instead of reading them after.
		if f.Kind == book.Misfire || f.Kind == book.Failover {
			records = r.records.Provable(f.Items)
		} else if f.Kind == book.Fire {
			records = f.Known
		}
		// The run's answers for the items it cannot mark, and for those
		// it gives back if the marking fails.
		var out marks.Outcomes = markOutcomes{r: r, f: f}
		marked, err := r.markRunning(ctx, f, nil, records, out)
		cancel()
		if err != nil {
			// marked holds the items still reserved here: a failover
			// run's queue entries stay, and its claims go back for a
			// retry; any other run's items are owed a misfire.
			if f.Kind == book.Failover {
				r.log.Warn("cannot mark failover items running; handing them back", "items", marked, "err", err)
			} else {
				r.log.Warn("cannot mark items running; they will run as a misfire", "items", marked, "err", err)
			}
			hctx, hcancel := context.WithTimeout(f.Sess.Ctx(), r.s.opts.reshardTimeout)
			out.Unmarked(hctx, marked)
			hcancel()
			return
		}
		f.Items = marked
	}
	r.startRuns(f, records)
}

// allHeld reports whether f, a scheduled fire with no record to prove,
// finds every item's mark held here under a live session: marking would
// send nothing (hold.go), so it is not called, nor its context made.
func (r *runner) allHeld(f *fire) bool {
	return f.Kind == book.Fire && len(f.Known) == 0 && f.Sess.Check() == nil && r.holds.HoldsAll(f.Sess, f.Items)
}

// startRuns starts the runs of f's items, reserved (and, monitored, marked
// running) here, and completes them. proven are item records the marking
// proved current.
func (r *runner) startRuns(f *fire, proven map[int]record) {
	n := len(f.Items)
	if n == 0 {
		return
	}
	var results chan itemResult // made where results are collected (not for a lone item, below)
	switch f.Kind {
	case book.Misfire, book.Failover:
		results = make(chan itemResult, n)
		r.narrowOwed(f, proven, results)
	case book.Backfill:
		results = make(chan itemResult, n)
		r.firer.RecheckBackfill(f, results)
	case book.Fire:
		if len(f.Unrecorded) > 0 {
			if f.Items = r.recheckUnrecorded(f); len(f.Items) == 0 {
				return
			}
			n = len(f.Items)
		}
		if n == 1 {
			f.OnePrior, _ = r.records.Lookup(f.Items[0])
			f.HasOne = true
		} else {
			f.Priors = r.records.Known(f.Items)
		}
	}
	// No execution starts before the fire it stands for: a run claimed
	// ahead of its time waits for it here. A lost session ends the wait
	// too, and the run finds its context cancelled.
	if !r.sleepUntil(r.book.LatestThrough(f.At, f.Items...), f.Sess.Ctx().Done()) {
		// Stopped before the fire's time: nothing started, and the items
		// are handed over as any run cut short by shutdown is.
		r.firer.CloseUnstarted(f, resultsFor(results, n), n)
		return
	}
	if len(f.Job.Parents) > 0 && f.Kind != book.Trigger && f.Kind != book.Backfill {
		if err := r.firer.AwaitParents(f); err != nil {
			if r.isClosed() || f.Sess.Check() != nil {
				r.firer.CloseUnstarted(f, resultsFor(results, n), n)
				return
			}
			if p := ParentPolicy(f.Job.OnParentFailure); p != ParentRun {
				r.firer.SkipForParents(f, resultsFor(results, n), n, err, p == ParentAlert)
				return
			}
			f.ParentErr = err
		}
	}
	f.Params = f.Job.Params
	if r.firer.Exec.Keyed() {
		if err := r.firer.ReadItemKeys(f); err != nil {
			r.firer.FailItems(f, resultsFor(results, n), n, err)
			return
		}
	}
	defer r.firer.TraceFire(f)()
	defer r.firer.FireStarted(f)()
	if r.firer.Exec.Ranges() {
		r.startRangeRuns(f, resultsFor(results, n), n)
		return
	}
	if n == 1 && len(f.Items) == 1 && !r.isClosed() {
		// A lone item (one to run, none settled) runs on this goroutine,
		// which would wait for it in any case, and is completed as it
		// returns: no goroutine and no channel for one result.
		it := f.Items[0]
		res := r.firer.ExecuteItem(f, it)
		res.Prior = f.Prior(it)
		r.done.Complete(f.Sess, f.Job.Done, []itemResult{res})
		return
	}
	results = resultsFor(results, n)
	for _, it := range f.Items {
		prior := f.Prior(it)
		if !r.goFunc(func() {
			res := r.firer.ExecuteItem(f, it)
			res.Prior = prior
			results <- res
		}) {
			results <- f.ClosedResult(it, f.FireOf(it), ErrSchedulerClosed)
		}
	}
	r.done.All(f.Sess, f.Job.Done, results, n)
}

// resultsFor returns results, made with room for n results if it is nil.
func resultsFor(results chan itemResult, n int) chan itemResult {
	if results == nil {
		return make(chan itemResult, n)
	}
	return results
}

// The rarer branches of startRuns, each a function of its own so that
// startRuns reads as the steady fire's path.

// narrowOwed narrows a make-up run (kind KindMisfire or KindFailover) for
// startRuns: f keeps the items still owed, the earliest fire each one owes
// and what their records said; results gets the items found settled.
func (r *runner) narrowOwed(f *fire, proven map[int]record, results chan<- itemResult) {
	f.Fires = r.book.AbsorbDebts(f.Job.Book, f.Items, f.At)
	defer r.firer.DropExpired(f, results)
	if f.Job.Unmonitored {
		return
	}
	for _, s := range r.firer.StillOwed(f, proven) {
		results <- s
	}
}

// startRangeRuns runs f's items as runs of consecutive items for a
// RangeJob, each on its own goroutine, and completes them.
func (r *runner) startRangeRuns(f *fire, results chan itemResult, n int) {
	for _, run := range fireplan.Runs(f.Items, f.FireOf) {
		if !r.goFunc(func() {
			for _, res := range r.firer.ExecuteRange(f, run) {
				res.Prior = f.Prior(res.Item)
				results <- res
			}
		}) {
			for it := run.First; it <= run.Last; it++ {
				results <- f.ClosedResult(it, run.Fire, ErrSchedulerClosed)
			}
		}
	}
	r.done.All(f.Sess, f.Job.Done, results, n)
}

// itemResult is what a run hands forward to its completion
// (job/internal/completion).
type itemResult = completion.Result

// runContext returns the parent of the runs under sess here: cancelled
// when sess ends, or with r.ctx.exec's cause when shutdown's grace period
// ends. There is one per session, made by its first run: a run of its own
// would link to r.ctx.exec and unlink again every time.
func (r *runner) runContext(sess *regcenter.Session) context.Context {
	return r.ctx.runs.Of(sess, r.ctx.exec)
}
