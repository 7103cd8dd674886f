package reconcile

import (
	"context"
	"fmt"
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
// valid for them (Fault says why); the departed servers' items are queued
// first, with failover on. It returns the servers it read (nil when the
// read failed) and clean: they were read and nothing was wrong.
func (a Assignment) Check(ctx context.Context) (servers reshard.Servers, clean bool, err error) {
	servers, why, err := a.Fault(ctx)
	if err != nil {
		return servers, false, err
	}
	if why == "" {
		return servers, true, nil
	}
	a.Log.Info("reconcile: flagging a reshard", "why", why)
	a.queue(ctx, servers)
	a.Flag(ctx)
	return servers, false, nil
}

// Fault reads the job's servers and says why its stored assignment is not
// right for those online now (FaultWith), with the servers read.
func (a Assignment) Fault(ctx context.Context) (reshard.Servers, string, error) {
	servers, err := reshard.ReadServers(ctx, a.RC, a.Paths)
	if err != nil {
		return nil, "", err
	}
	why, err := a.FaultWith(ctx, servers)
	if err != nil {
		return nil, "", err
	}
	return servers, why, nil
}

// FaultWith says why the job's stored assignment is not right for the
// servers online among servers, "" when it is: for a placed job the first
// fault reshard.PlacementFault finds, for another the first server whose
// stored items are not the strategy's (reshard.FirstStale) or whose node
// is garbage. It flags nothing: a new leader asks it whether the
// assignment it inherits holds (leader.Office.Inherit), each round
// whether it still does (Check).
func (a Assignment) FaultWith(ctx context.Context, servers reshard.Servers) (string, error) {
	if Placed(a.Strategy) {
		return reshard.PlacementFault(ctx, a.RC, a.Paths, servers, a.Total)
	}
	strategy, err := a.Lookup()
	if err != nil {
		return "", err
	}
	want, err := sharding.Assign(strategy, a.Name, servers.Online(), a.Total)
	if err != nil {
		return "", err
	}
	stale, err := reshard.FirstStale(ctx, a.RC, a.Paths, servers, want)
	switch {
	case err != nil:
		return "", err
	case stale.Garbage != nil:
		return fmt.Sprintf("garbage assignment on server %s: %v", stale.Server, stale.Garbage), nil
	case stale.Server != "":
		return fmt.Sprintf("stored assignment is stale: server %s holds %v, the strategy gives it %v", stale.Server, stale.Have, stale.Want), nil
	}
	return "", nil
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
