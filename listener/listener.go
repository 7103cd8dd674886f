// Package listener tells applications about executions, at three levels:
//
//   - [Listener]: before and after each item runs on this instance
//     (job.WithListener);
//   - [FireListener]: when a fire starts and ends on this instance, around
//     all its items there (job.WithFireListener);
//   - [DistributeOnce]: hooks that run once per fire across the whole
//     cluster, before any instance executes the fire's items and after
//     every item has completed everywhere, each wait bounded
//     ([Guarantee], job.DistributeOnce).
//
// Listeners are plain interfaces with no dependency on the scheduler, so
// they can be shared by monitoring code; the package also holds the
// registry plumbing of distribute-once hooks ([Guarantee]).
package listener

import (
	"encoding/json"
	"time"
)

// Execution describes one execution of one sharding item.
type Execution struct {
	// Job is the job's name.
	Job string
	// TaskID identifies the fire across the cluster.
	TaskID string
	// ServerID is the instance executing the item.
	ServerID string
	// Item is the sharding item.
	Item int
	// Kind is why it runs: fire, misfire, failover or trigger.
	Kind string
	// FireTime is the scheduled fire time the execution belongs to.
	FireTime time.Time
	// Begin is when the execution started; End when it returned (zero in
	// BeforeExecution).
	Begin, End time.Time
	// Err is what the job returned (nil in BeforeExecution).
	Err error
	// Output is the run's output, the JSON value it recorded last with
	// job.RecordOutput, at most job.MaxOutputSize bytes; nil when it
	// recorded none, and always in BeforeExecution. It is set whatever the
	// run returned. For a range run (job.RangeJob) it is the range's.
	// Listeners share it: read it, do not change it.
	Output json.RawMessage
	// Attempt is the execution's try of its fire's item run: 1 for the
	// first, 2 for the first retry (see job.ShardingContext.Attempt); 0
	// when whoever made the Execution did not say.
	Attempt int
}

// Listener is told about every execution on this instance. Calls happen on
// the execution's goroutine, so a slow listener delays the item; they must
// be safe for concurrent use.
type Listener interface {
	BeforeExecution(e Execution)
	AfterExecution(e Execution)
}

// Funcs adapts two functions to Listener; either may be nil.
type Funcs struct {
	Before func(Execution)
	After  func(Execution)
}

// BeforeExecution calls f.Before if set.
func (f Funcs) BeforeExecution(e Execution) {
	if f.Before != nil {
		f.Before(e)
	}
}

// AfterExecution calls f.After if set.
func (f Funcs) AfterExecution(e Execution) {
	if f.After != nil {
		f.After(e)
	}
}
