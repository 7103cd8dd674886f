package job

import (
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/schedule"
)

// The starting deadline (Config.StartingDeadline): a make-up run runs only
// the fires of the last StartingDeadline. Older fires are dropped here, as
// the run starts, once its debts are gathered (narrowOwed): from every path
// into a make-up run alike — a fire missed while its item ran, fires
// missed while disconnected, a debt inherited in a reshard, a failover.

// dropExpired narrows f, a make-up run (kind KindMisfire or KindFailover),
// to the fires within the job's starting deadline: an item whose run
// starts before the deadline's cutoff starts at the first fire after it,
// and one with no fire left is settled (cleaned up without running) on
// results. The fires dropped are counted, logged once per run, and
// reported as EventFiresExpired — but for those that may have run already
// (ShardingContext.MayHaveRunThrough: a previous owner that went away may
// have run them, unrecorded): a fire that ran did not expire, so those are
// dropped and logged apart, never reported as expired. The fires the
// item's record lists as run are not among the dropped at all: the run
// was narrowed to the first stretch its record does not list (stillOwed).
func (r *runner) dropExpired(f *fire, results chan<- itemResult) {
	d := f.Job.StartingDeadline
	if d <= 0 || len(f.Items) == 0 {
		return
	}
	sched := f.Job.Sched
	if f.Job.SchedErr != nil {
		return
	}
	now := r.s.opts.now()
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
		through := r.book.LatestThrough(since, it)
		e := dl.Item(since, through, fireplan.MayHaveRunThrough(f.MayHaveRun, it, since, through))
		maybe += e.MayHaveRun
		if e.Expired > 0 {
			expired += e.Expired
			expiredItems = append(expiredItems, it)
		}
		if e.Settle {
			results <- itemResult{Item: it, Fire: since, Through: through, Kind: f.Kind, Begin: now, End: now, Settled: true}
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
		r.log.Warn("fires older than the starting deadline dropped, not made up; a previous owner may have run them",
			"fires", maybe, "deadline", d, "kind", f.Kind.String())
	}
	if expired == 0 {
		return
	}
	r.counters.firesExpired.Add(int64(expired))
	r.log.Warn("fires older than the starting deadline dropped, not made up",
		"items", layout.FormatItems(expiredItems), "fires", expired, "deadline", d, "kind", f.Kind.String())
	r.s.emit(Event{Kind: EventFiresExpired, Job: r.name, Units: expired, Detail: layout.FormatItems(expiredItems), At: now})
}
