package failover

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/shardjob/shardjob/failover"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/regcenter"
)

// Departures is the leader's queueing of a departed server's items. What
// it needs of the runner is handed to it when it is made; it keeps no
// state and starts nothing.
type Departures struct {
	RC    regcenter.Center
	Paths layout.Job
	Job   string // the job's name
	Log   *slog.Logger
	// Fence is the leader's fence (election.Election.Fence).
	Fence func() (regcenter.Op, error)
	// Cleared, when set, is told of each departed assignment with items
	// cleared: the load table credits its server with them until a
	// reshard or a repair tells it (reshard.Resharder.NoteBooksBehind).
	Cleared func()
	// Completed is the latest fire item's record lists as completed
	// (zero: none).
	Completed func(ctx context.Context, item int) (time.Time, error)
	// Retried is how many attempts of fire failed on item's owner before
	// it waited to retry (marks.ReadRetry; 0: none known): the entry
	// carries the count on. Nil: none read.
	Retried func(ctx context.Context, item int, fire time.Time) (int, error)
	// Now is the scheduler's clock, Lead its fire lead.
	Now  func() time.Time
	Lead time.Duration
}

// ErrNoSchedule: Queue was given no schedule (the job's does not parse).
var ErrNoSchedule = errors.New("failover: no schedule to queue a departed server's items by")

// Queue is the leader's reaction to servers that left while holding
// items: every item of theirs (below total) that has not completed the
// latest fire of sched dispatched (one claimed ahead of its time counts:
// the departed instance may have claimed it) is queued for failover, and
// their assignment is cleared in the same transaction (QueueDeparted) so
// that one departure is queued once. servers are the job's servers and
// the children of each (reshard.Servers); a departed one has an
// assignment and no status.
func (d *Departures) Queue(ctx context.Context, servers map[string]map[string]bool, total int, sched fireplan.Schedule) error {
	if sched == nil {
		return ErrNoSchedule
	}
	latest := fireplan.Due(sched, d.Now(), d.Lead)
	var errs []error
	for _, sv := range slices.Sorted(maps.Keys(servers)) {
		kids := servers[sv]
		if kids[layout.Status] || !kids[layout.Sharding] {
			continue
		}
		dep, err := ReadDeparted(ctx, d.RC, d.Paths, sv)
		if err != nil {
			if !errors.Is(err, regcenter.ErrNoNode) {
				errs = append(errs, err)
			}
			continue
		}
		if dep.Garbage != nil {
			d.Log.Warn("garbage assignment of departed server; clearing it", "server", sv, "err", dep.Garbage)
		}
		if len(dep.Items) == 0 {
			continue
		}
		var entries []failover.Entry
		for _, it := range dep.Items {
			if it >= total || latest.IsZero() {
				continue
			}
			done, err := d.Completed(ctx, it)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			e, owed := Owed(sched, it, sv, done, latest)
			if !owed {
				continue
			}
			if d.Retried != nil {
				// A count that cannot be read starts again: the fire is
				// queued all the same.
				if n, err := d.Retried(ctx, it, time.UnixMilli(e.Fire)); err != nil {
					d.Log.Warn("reading a departed instance's retry count; its fire's attempts start again", "item", it, "err", err)
				} else {
					e.Attempts = n
				}
			}
			entries = append(entries, e)
		}
		fence, err := d.Fence()
		if err != nil {
			return err
		}
		// Clearing the departed server's assignment with a version check
		// makes a concurrent second queueing of the same departure fail.
		if err := QueueDeparted(ctx, d.RC, d.Job, dep, entries, fence); err != nil {
			if errors.Is(err, regcenter.ErrBadVersion) {
				continue
			}
			errs = append(errs, err)
			continue
		}
		if d.Cleared != nil {
			d.Cleared()
		}
		if len(entries) > 0 {
			d.Log.Info("queued items of a departed instance for failover", "server", sv, "items", len(entries))
		}
	}
	return errors.Join(errs...)
}

// Owed is the queue entry item of server from owes when from left at the
// latest fire dispatched, latest, having completed fires through done
// (zero: none); false when it completed latest and owes nothing. The
// entry's fire is the first of sched after done, if before latest, else
// latest; the departed instance may have started any fire due before it
// left, up to latest: its runs in flight, and those whose completion was
// (see ShardingContext.MayHaveRunThrough).
func Owed(sched fireplan.Schedule, item int, from string, done, latest time.Time) (failover.Entry, bool) {
	if !done.IsZero() && !done.Before(latest) {
		return failover.Entry{}, false // completed the latest fire: nothing to redo
	}
	since := latest
	if !done.IsZero() {
		if n := sched.Next(done); !n.IsZero() && n.Before(latest) {
			since = n
		}
	}
	return failover.Entry{Item: item, Fire: since.UnixMilli(), From: from, MayHaveRun: latest.UnixMilli()}, true
}
