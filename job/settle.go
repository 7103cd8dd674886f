package job

import (
	"context"
	"time"

	"github.com/shardjob/shardjob/internal/parallel"
)

// settleInFlight bounds how many jobs' reshards Start waits for at once.
const settleInFlight = 512

// settleLongest bounds Start's wait for the reshards of its jobs about to
// fire (settle) in all, however they keep coming.
const settleLongest = 10 * time.Second

// settle is the end of Start: for each job that fires within settleWithin
// and has prepared (joined its election), it waits until no reshard of the
// job is due and this server's assignment is written, having asked the
// leader for the reshard at once (reshard.Resharder.AwaitPlaced: the
// leader asks itself too, its reshard runs under its own bounds, whole,
// whether or not this wait ends first, and a reshard that read the
// servers before this one joined is followed by one asked for here) — so
// that the job's first fires after Start find their assignment made
// instead of waiting for it, each instance of a fleet started at once
// behind the same storm of reshards.
// It waits while the reshards keep coming: it ends once settleWithin
// passes with none of them done (a job's wait done, or its reshard
// answered without this server and the next asked for), or after
// settleLongest in all (a slow
// registry committing a fleet's hundreds of reshards one after another
// takes longer than settleWithin in all, each reshard well within it). It
// never fails Start: a leader that does not answer in time (gone, its
// session not yet expired) leaves the reshard to the fire, as without the
// wait. Jobs firing later reshard right before their fire, as ever.
func (s *Scheduler) settle(ctx context.Context, runners []*runner) {
	var due []*active
	for _, r := range runners {
		if a := r.activeIfMade(); a != nil && r.fireWithin(r.config(), settleWithin) {
			due = append(due, a)
		}
	}
	if len(due) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, settleLongest)
	defer cancel()
	start := time.Now()
	unsettled := 0
	errs := parallel.EachWhileProgress(ctx, len(due), settleInFlight, settleWithin, func(ctx context.Context, i int, progress func()) error {
		return due[i].reshard.AwaitPlaced(ctx, progress)
	})
	for _, err := range errs {
		if err != nil {
			unsettled++
		}
	}
	if unsettled > 0 {
		// Their first fires wait for the reshard, or are made up after it.
		s.log.Info("some reshards of jobs about to fire were not done when Start returned", "jobs", len(due), "unsettled", unsettled, "took", time.Since(start))
		return
	}
	s.log.Debug("waited for the reshards of jobs about to fire", "jobs", len(due), "took", time.Since(start))
}
