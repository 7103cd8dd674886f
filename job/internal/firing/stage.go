package firing

import (
	"context"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/book"
	"github.com/shardjob/shardjob/job/internal/completion"
	"github.com/shardjob/shardjob/job/internal/configcheck"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/records"
)

// The run stage: a fire's items, reserved here, are marked running (a
// monitored job, mark.go), narrowed by the leaves of the start
// (leaves.go), run concurrently, each on a goroutine of the job's runner,
// and their results handed to the Completer (job/internal/completion).

// ReserveAndRun reserves f's items here (the ones free), then marks and
// runs them: the path of a fire whose items nothing reserved before it (a
// trigger).
func (fr *Firer) ReserveAndRun(f *Fire) {
	f.Job = fr.Current()
	f.Items = fr.Book.Reserve(f.Job.Book, f.Items, f.At, time.Time{}, f.Kind, fr.Flags.DisabledItems())
	fr.MarkAndRun(f)
}

// MarkAndRun marks f's items, reserved here, running (a monitored job),
// then runs and completes them.
func (fr *Firer) MarkAndRun(f *Fire) {
	if len(f.Items) == 0 {
		return
	}
	var known map[int]records.Record
	if !f.Job.Unmonitored && !fr.allHeld(f) {
		ctx, cancel := fr.Coord(f.Sess)
		// A make-up run proves what this instance knows of its items'
		// records while it marks them, instead of reading them after.
		if f.Kind == book.Misfire || f.Kind == book.Failover {
			known = fr.Records.Provable(f.Items)
		} else if f.Kind == book.Fire {
			known = f.Known
		}
		// The run's answers for the items it cannot mark, and for those
		// it gives back if the marking fails.
		out := outcomes{fr: fr, f: f}
		marked, err := fr.Mark(ctx, f, nil, known)
		cancel()
		if err != nil {
			// marked holds the items still reserved here: a failover
			// run's queue entries stay, and its claims go back for a
			// retry; any other run's items are owed a misfire.
			if f.Kind == book.Failover {
				fr.Log.Warn("cannot mark failover items running; handing them back", "items", marked, "err", err)
			} else {
				fr.Log.Warn("cannot mark items running; they will run as a misfire", "items", marked, "err", err)
			}
			hctx, hcancel := context.WithTimeout(f.Sess.Ctx(), fr.Timeout)
			out.Unmarked(hctx, marked)
			hcancel()
			return
		}
		f.Items = marked
	}
	fr.StartRuns(f, known)
}

// allHeld reports whether f, a scheduled fire with no record to prove,
// finds every item's mark held here under a live session: marking would
// send nothing, so it is not called, nor its context made.
func (fr *Firer) allHeld(f *Fire) bool {
	return f.Kind == book.Fire && len(f.Known) == 0 && f.Sess.Check() == nil && fr.Holds.HoldsAll(f.Sess, f.Items)
}

// StartRuns starts the runs of f's items, reserved (and, monitored,
// marked running) here, and completes them. proven are item records the
// marking proved current.
func (fr *Firer) StartRuns(f *Fire, proven map[int]records.Record) {
	n := len(f.Items)
	if n == 0 {
		return
	}
	var results chan completion.Result // made where results are collected (not for a lone item, below)
	switch f.Kind {
	case book.Misfire, book.Failover:
		results = make(chan completion.Result, n)
		fr.narrowOwed(f, proven, results)
	case book.Backfill:
		results = make(chan completion.Result, n)
		fr.RecheckBackfill(f, results)
	case book.Fire:
		if len(f.Unrecorded) > 0 {
			if f.Items = fr.RecheckUnrecorded(f); len(f.Items) == 0 {
				return
			}
			n = len(f.Items)
		}
		if n == 1 {
			f.OnePrior, _ = fr.Records.Lookup(f.Items[0])
			f.HasOne = true
		} else {
			f.Priors = fr.Records.Known(f.Items)
		}
	}
	// No execution starts before the fire it stands for: a run claimed
	// ahead of its time waits for it here. A lost session ends the wait
	// too, and the run finds its context cancelled.
	if !fr.SleepUntil(fr.Book.LatestThrough(f.At, f.Items...), f.Sess.Ctx().Done()) {
		// Stopped before the fire's time: nothing started, and the items
		// are handed over as any run cut short by shutdown is.
		fr.CloseUnstarted(f, resultsFor(results, n), n)
		return
	}
	if len(f.Job.Parents) > 0 && f.Kind != book.Trigger && f.Kind != book.Backfill {
		if err := fr.AwaitParents(f); err != nil {
			if fr.Stopped() || f.Sess.Check() != nil {
				fr.CloseUnstarted(f, resultsFor(results, n), n)
				return
			}
			if p := f.Job.OnParentFailure; p != configcheck.ParentRun {
				fr.SkipForParents(f, resultsFor(results, n), n, err, p == configcheck.ParentAlert)
				return
			}
			f.ParentErr = err
		}
	}
	f.Params = f.Job.Params
	if fr.Exec.Keyed() {
		if err := fr.ReadItemKeys(f); err != nil {
			fr.FailItems(f, resultsFor(results, n), n, err)
			return
		}
	}
	defer fr.TraceFire(f)()
	defer fr.FireStarted(f)()
	if fr.Exec.Ranges() {
		fr.startRangeRuns(f, resultsFor(results, n), n)
		return
	}
	if n == 1 && len(f.Items) == 1 && !fr.Stopped() {
		// A lone item (one to run, none settled) runs on this goroutine,
		// which would wait for it in any case, and is completed as it
		// returns: no goroutine and no channel for one result.
		it := f.Items[0]
		res := fr.ExecuteItem(f, it)
		res.Prior = f.Prior(it)
		fr.Done.Complete(f.Sess, f.Job.Done, []completion.Result{res})
		return
	}
	results = resultsFor(results, n)
	for _, it := range f.Items {
		prior := f.Prior(it)
		if !fr.Go(func() {
			res := fr.ExecuteItem(f, it)
			res.Prior = prior
			results <- res
		}) {
			results <- f.ClosedResult(it, f.FireOf(it), fr.Closed)
		}
	}
	fr.Done.All(f.Sess, f.Job.Done, results, n)
}

// resultsFor returns results, made with room for n results if it is nil.
func resultsFor(results chan completion.Result, n int) chan completion.Result {
	if results == nil {
		return make(chan completion.Result, n)
	}
	return results
}

// narrowOwed narrows a make-up run (misfire or failover) for StartRuns: f
// keeps the items still owed, the earliest fire each one owes and what
// their records said; results gets the items found settled.
func (fr *Firer) narrowOwed(f *Fire, proven map[int]records.Record, results chan<- completion.Result) {
	f.Fires = fr.Book.AbsorbDebts(f.Job.Book, f.Items, f.At)
	defer fr.DropExpired(f, results)
	if f.Job.Unmonitored {
		return
	}
	for _, s := range fr.StillOwed(f, proven) {
		results <- s
	}
}

// startRangeRuns runs f's items as runs of consecutive items for a
// RangeJob, each on its own goroutine, and completes them.
func (fr *Firer) startRangeRuns(f *Fire, results chan completion.Result, n int) {
	for _, run := range fireplan.Runs(f.Items, f.FireOf) {
		if !fr.Go(func() {
			for _, res := range fr.ExecuteRange(f, run) {
				res.Prior = f.Prior(res.Item)
				results <- res
			}
		}) {
			for it := run.First; it <= run.Last; it++ {
				results <- f.ClosedResult(it, run.Fire, fr.Closed)
			}
		}
	}
	fr.Done.All(f.Sess, f.Job.Done, results, n)
}

// RecheckUnrecorded reads again, now that f's marks are made, the records
// of f's items that had none when the fire read them, or whose mark
// another run held when the fire marked them (Fire.Recheck), and returns
// f's items without those whose record now lists this fire
// (inherit.Reader.Recheck). They are released unrun; their marks stay
// held here.
func (fr *Firer) RecheckUnrecorded(f *Fire) []int {
	ctx, cancel := fr.Coord(f.Sess)
	defer cancel()
	keep, gone := fr.Inheritance.Recheck(ctx, f.Job.Book.Schedule, f.At, f.Items, f.Unrecorded)
	if len(gone) > 0 {
		fr.Log.Info("items gained at this fire ran it on their previous owner while they were marked here", "items", layout.FormatItems(gone), "fire", f.At)
		fr.Release(gone)
	}
	return keep
}

// SleepUntil waits until at by the scheduler's clock, or until wake is
// closed (nil: never), and reports true; false if the job stops here
// first.
func (fr *Firer) SleepUntil(at time.Time, wake <-chan struct{}) bool {
	if !at.After(fr.Now()) {
		return true
	}
	select {
	case <-fr.Until(at):
		return true
	case <-wake:
		return true
	case <-fr.Life.Done():
		return false
	}
}
