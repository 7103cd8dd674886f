package listener

import (
	"context"
	"time"
)

// Fire describes one fire of a job on this instance, for FireListener, or
// across the cluster, for DistributeOnce.
type Fire struct {
	// Job is the job's name; TaskID identifies the fire across the
	// cluster ("{job}@{fire time in unix ms}").
	Job    string
	TaskID string
	// FireTime is the fire's scheduled time.
	FireTime time.Time
	// Kind is why it runs: fire, misfire, failover or trigger.
	Kind string
	// ServerID is this instance (FireListener), or the instance running
	// the hook (DistributeOnce).
	ServerID string
	// Items are the items this instance runs in the fire (FireListener),
	// or every item of the job, 0..ShardingTotalCount-1 (DistributeOnce).
	Items []int
	// Begin is when the fire started here; End when its last item ended
	// (zero in FireStarted).
	Begin, End time.Time
}

// FireListener is told when a fire starts and ends on this instance: once
// per fire (and per make-up run) that runs items here, around all of them.
// Calls happen on the fire's goroutine; they must be quick and safe for
// concurrent use (fires of different jobs overlap).
type FireListener interface {
	FireStarted(f Fire)
	FireEnded(f Fire)
}

// FireFuncs adapts two functions to FireListener; either may be nil.
type FireFuncs struct {
	Started func(Fire)
	Ended   func(Fire)
}

// FireStarted calls f.Started if set.
func (f FireFuncs) FireStarted(fire Fire) {
	if f.Started != nil {
		f.Started(fire)
	}
}

// FireEnded calls f.Ended if set.
func (f FireFuncs) FireEnded(fire Fire) {
	if f.Ended != nil {
		f.Ended(fire)
	}
}

// DistributeOnce has hooks that run once per fire across the whole
// cluster: Before before any instance executes the fire's items, After once
// every item of the fire has completed on every instance (see Guarantee).
// Each hook runs on one instance, with a context bounded by the
// guarantee's timeout; an error fails the fire's items.
type DistributeOnce interface {
	BeforeFire(ctx context.Context, f Fire) error
	AfterFire(ctx context.Context, f Fire) error
}
