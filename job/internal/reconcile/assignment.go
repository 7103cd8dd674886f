package reconcile

import (
	"context"
	"log/slog"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/reshard"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/sharding"
)

// Assignment is what a leader's round checks of its job: whether the
// stored assignment is still right for the servers online now, and if
// not, what it asks for.
type Assignment struct {
	RC    regcenter.Center
	Paths layout.Job
	// Name is the job's; Strategy names its sharding strategy ("" is the
	// default), and Total is its item count.
	Name     string
	Strategy string
	Total    int
	// Lookup gives the strategy's Strategy, for one that does not place
	// by the load table.
	Lookup func() (sharding.Strategy, error)
	// Failover reports failover on: the items of departed servers are
	// queued before the reshard is flagged.
	Failover bool
	// QueueDeparted queues the items of servers departed.
	QueueDeparted func(context.Context, reshard.Servers) error
	// Flag flags a reshard of the job.
	Flag func(context.Context)
	Log  *slog.Logger
}

// Placed reports whether strategy places by the load table (the default,
// balanced, idlest) rather than by its own assignment.
func Placed(strategy string) bool {
	return strategy == "" || strategy == sharding.Balanced || strategy == sharding.Idlest
}

// Check flags a reshard when the stored assignment differs from the
// strategy's for the servers online now, or, for a placed job, is not
// valid for them (reshard.PlacementFault says why).
func (a Assignment) Check(ctx context.Context) error {
	servers, err := reshard.ReadServers(ctx, a.RC, a.Paths)
	if err != nil {
		return err
	}
	if Placed(a.Strategy) {
		return a.checkPlacement(ctx, servers)
	}
	strategy, err := a.Lookup()
	if err != nil {
		return err
	}
	want, err := sharding.Assign(strategy, a.Name, servers.Online(), a.Total)
	if err != nil {
		return err
	}
	stale, err := reshard.FirstStale(ctx, a.RC, a.Paths, servers, want)
	switch {
	case err != nil:
		return err
	case stale.Garbage != nil:
		a.Log.Warn("reconcile: garbage assignment; resharding", "server", stale.Server, "err", stale.Garbage)
		a.Flag(ctx)
	case stale.Server != "":
		a.Log.Info("reconcile: stored assignment is stale; flagging a reshard", "server", stale.Server, "have", stale.Have, "want", stale.Want)
		a.queue(ctx, servers)
		a.Flag(ctx)
	}
	return nil
}

// checkPlacement flags a reshard when a placed job's stored assignment is
// not valid for servers.
func (a Assignment) checkPlacement(ctx context.Context, servers reshard.Servers) error {
	why, err := reshard.PlacementFault(ctx, a.RC, a.Paths, servers, a.Total)
	if err != nil || why == "" {
		return err
	}
	a.Log.Info("reconcile: flagging a reshard", "why", why)
	a.queue(ctx, servers)
	a.Flag(ctx)
	return nil
}

// queue queues the departed servers' items, with failover on.
func (a Assignment) queue(ctx context.Context, servers reshard.Servers) {
	if !a.Failover {
		return
	}
	if err := a.QueueDeparted(ctx, servers); err != nil {
		a.Log.Warn("reconcile: queueing failover", "err", err)
	}
}
