package firing

import (
	"fmt"
	"maps"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/completion"
	"github.com/shardjob/shardjob/job/internal/deps"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/itemkeys"
	"github.com/shardjob/shardjob/job/internal/makeup"
	"github.com/shardjob/shardjob/job/internal/records"
	"github.com/shardjob/shardjob/job/internal/schedule"
)

// The leaves of a fire's start (StartRuns, stage.go): each narrows
// the fire, or completes its items without running them, and returns.

// MakeUpThrough is the latest fire a make-up run of j since since,
// reserved now, stands for: the latest fire dispatched, which may be a
// fire claimed ahead of its time (the run then starts at that time).
func (fr *Firer) MakeUpThrough(j *Job, since time.Time) time.Time {
	return fireplan.MakeUpThrough(j.Book.Schedule, since, fr.Now(), fr.Lead)
}

// StillOwed narrows f, a make-up run (misfire or failover), to the fires
// its items still owe, now that this instance holds their running marks
// (makeup.Debts.Narrow): the fires their records list, run here or on
// another instance, are not run again. f keeps the items to run, the
// fire each starts at (f.Fires) and the records read (f.Priors), which
// the runs' completions add to; the items whose every owed fire is
// covered are returned, settled without running. An item's record in
// proven (proved current when the item was marked) is not read again.
func (fr *Firer) StillOwed(f *Fire, proven map[int]records.Record) (settled []completion.Result) {
	if f.Job.SchedErr != nil {
		f.Priors = nil
		return nil
	}
	ctx, cancel := fr.Coord(f.Sess)
	defer cancel()
	n := fr.Debts.Narrow(ctx, makeup.Run{Job: f.Job.Book, At: f.At, Kind: f.Kind, Items: f.Items, Fires: f.Fires,
		Read: fr.Current().Book.Schedule}, proven)
	maps.Copy(f.Fires, n.Starts)
	f.Items, f.Priors = n.Todo, n.Priors
	return n.Settled
}

// The starting deadline (package job's Config.StartingDeadline): a
// make-up run runs only the fires of the last StartingDeadline. Older
// fires are dropped as the run starts, once its debts are gathered: from
// every path into a make-up run alike — a fire missed while its item
// ran, fires missed while disconnected, a debt inherited in a reshard, a
// failover.

// DropExpired narrows f, a make-up run (misfire or failover), to the
// fires within the job's starting deadline: an item whose run starts
// before the deadline's cutoff starts at the first fire after it, and one
// with no fire left is settled (cleaned up without running) on results.
// The fires dropped are counted, logged once per run, and reported
// (OnExpired) — but for those that may have run already (a previous owner
// that went away may have run them, unrecorded): a fire that ran did not
// expire, so those are dropped and logged apart, never reported as
// expired. The fires the item's record lists as run are not among the
// dropped at all: the run was narrowed to the first stretch its record
// does not list (StillOwed).
func (fr *Firer) DropExpired(f *Fire, results chan<- completion.Result) {
	d := f.Job.StartingDeadline
	if d <= 0 || len(f.Items) == 0 {
		return
	}
	sched := f.Job.Sched
	if f.Job.SchedErr != nil {
		return
	}
	now := fr.Now()
	dl := schedule.NewDeadline(sched, now, d)
	keep := f.Items[:0:0]
	var expiredItems []int
	expired, maybe := 0, 0
	for _, it := range f.Items {
		since := f.FireOf(it)
		if dl.Within(since) {
			keep = append(keep, it)
			continue
		}
		through := fr.Book.LatestThrough(since, it)
		e := dl.Item(since, through, fireplan.MayHaveRunThrough(f.MayHaveRun, it, since, through))
		maybe += e.MayHaveRun
		if e.Expired > 0 {
			expired += e.Expired
			expiredItems = append(expiredItems, it)
		}
		if e.Settle {
			results <- completion.Result{Item: it, Fire: since, Through: through, Kind: f.Kind, Begin: now, End: now, Settled: true}
			continue
		}
		if f.Fires == nil {
			f.Fires = map[int]time.Time{}
		}
		f.Fires[it] = e.From
		keep = append(keep, it)
	}
	f.Items = keep
	if maybe > 0 {
		fr.Log.Warn("fires older than the starting deadline dropped, not made up; a previous owner may have run them",
			"fires", maybe, "deadline", d, "kind", f.Kind.String())
	}
	if expired == 0 {
		return
	}
	fr.FiresExpired.Add(int64(expired))
	fr.Log.Warn("fires older than the starting deadline dropped, not made up",
		"items", layout.FormatItems(expiredItems), "fires", expired, "deadline", d, "kind", f.Kind.String())
	fr.OnExpired(expired, layout.FormatItems(expiredItems), now)
}

// AwaitParents waits until every parent of f's job has completed, on
// every item, every fire f's runs stand for (from the earliest of its
// items' fires through the latest), or until the job's AfterTimeout (by
// default its next fire) or the session ends. It returns nil when they
// all succeeded, else an error wrapping ParentFailed that says which
// parent, item and fire, or that the wait timed out.
func (fr *Firer) AwaitParents(f *Fire) error {
	parents := f.Job.Parents
	if len(parents) == 0 || len(f.Items) == 0 {
		return nil
	}
	first := fireplan.Earliest(f.Fires, f.At, f.Items)
	last := fr.Book.LatestThrough(f.At, f.Items...)
	sched := f.Job.Sched
	if err := f.Job.SchedErr; err != nil {
		return err
	}
	wait := deps.Bound(f.Job.AfterTimeout, sched, last, fr.Now())
	// Each parent's fires are its own jittered times of the same nominal
	// fires.
	err := deps.Await(fr.RunContext(f.Sess), fr.RC, fr.Log, deps.Wait{Parents: parents, Parent: fr.Parent,
		First: schedule.NominalFire(sched, first), Last: schedule.NominalFire(sched, last), Fire: first, Timeout: wait})
	if err != nil {
		return fmt.Errorf("%w: %w", fr.ParentFailed, err)
	}
	return nil
}

// SkipForParents completes f's items without running them, each as a
// run failed with err (a dependent job that skips, or alerts, when a
// parent's fire did not succeed: alert logs at error level).
func (fr *Firer) SkipForParents(f *Fire, results chan completion.Result, n int, err error, alert bool) {
	msg := "skipping the run: a parent's fire did not succeed"
	if alert {
		fr.Log.Error(msg, "items", layout.FormatItems(f.Items), "fire", f.At, "err", err)
	} else {
		fr.Log.Warn(msg, "items", layout.FormatItems(f.Items), "fire", f.At, "err", err)
	}
	fr.OnParentFailed(len(f.Items), err, time.Now())
	fr.unrun(f, results, n, err)
}

// ReadItemKeys reads, for a fire of a job whose items come from data,
// the key of each of f's items in the list in force at its fire.
func (fr *Firer) ReadItemKeys(f *Fire) error {
	ctx, cancel := fr.Coord(f.Sess)
	defer cancel()
	keys, err := itemkeys.Read(ctx, fr.RC, fr.Paths, f.Items, f.FireOf, fr.ReportBad)
	if err != nil {
		return fmt.Errorf("%w: %w", fr.ItemKeysErr, err)
	}
	f.Keys = keys
	return nil
}

// FailItems completes f's items, which did not start, as failed with err.
func (fr *Firer) FailItems(f *Fire, results chan completion.Result, n int, err error) {
	fr.Log.Warn("fire failed before its runs", "fire", f.At, "err", err)
	fr.unrun(f, results, n, err)
}

// unrun completes f's items, which did not start, as runs failed with err.
func (fr *Firer) unrun(f *Fire, results chan completion.Result, n int, err error) {
	now := time.Now()
	for _, it := range f.Items {
		through := fr.Book.LatestThrough(f.FireOf(it), it)
		results <- completion.Result{Item: it, Fire: f.FireOf(it), Through: through, Kind: f.Kind, Begin: now, End: now, Err: err}
	}
	fr.Done.All(f.Sess, f.Job.Done, results, n)
}

// RecheckBackfill reads, once f's items are marked here, their progress
// in f's backfill (backfilling.Registry.Recheck): an item that ran f's
// fire elsewhere meanwhile is settled unrun, its mark deleted by the
// completion, which writes the progress over the versions read.
func (fr *Firer) RecheckBackfill(f *Fire, results chan<- completion.Result) {
	ctx, cancel := fr.Coord(f.Sess)
	defer cancel()
	keep, ran, versions := fr.Backfills.Recheck(ctx, f.Backfill, f.At, f.Items)
	f.BackfillVersions = versions
	now := time.Now()
	for _, it := range ran {
		results <- completion.Result{Item: it, Fire: f.At, Kind: f.Kind, Begin: now, End: now, Settled: true, Backfill: f.Backfill}
	}
	f.Items = keep
}

// CloseUnstarted completes f's items, which shutdown stopped before their
// fire's time, as runs cut short by shutdown (handed over).
func (fr *Firer) CloseUnstarted(f *Fire, results chan completion.Result, n int) {
	for _, it := range f.Items {
		results <- f.ClosedResult(it, f.FireOf(it), fr.Closed)
	}
	fr.Done.All(f.Sess, f.Job.Done, results, n)
}
