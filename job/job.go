package job

import (
	"context"
	"fmt"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

// Job is what an application implements. Execute is called once per
// sharding item per fire, concurrently for the items this instance holds.
//
// ctx is cancelled when the scheduler shuts down (after its grace period)
// or when this instance loses the registry long enough that it may no longer
// own the item (its lease lapsed). A reshard does not cancel a running
// item: it finishes, and the item's new owner runs it once afterwards for
// the fires it found it busy. A job that honours ctx — and
// calls [ShardingContext.StillOwner] right before each side effect that must
// not happen twice — never runs an item at the same time as another
// instance.
//
// An error return is logged and recorded in the item's completed node; the
// item is still considered done for this fire.
type Job interface {
	Execute(ctx context.Context, sc ShardingContext) error
}

// SimpleFunc adapts a function to [Job].
type SimpleFunc func(ctx context.Context, sc ShardingContext) error

// Execute calls f.
func (f SimpleFunc) Execute(ctx context.Context, sc ShardingContext) error { return f(ctx, sc) }

// Kind says why an item is executing.
type Kind string

// Execution kinds.
const (
	// KindFire is a regular fire of the job's schedule.
	KindFire Kind = "fire"
	// KindMisfire makes up for fires that found the item still running.
	KindMisfire Kind = "misfire"
	// KindFailover runs an item a crashed or departed instance did not
	// finish.
	KindFailover Kind = "failover"
	// KindTrigger is an operator's "run once now".
	KindTrigger Kind = "trigger"
	// KindBackfill runs a past fire again, for an operator's backfill of
	// a range (`shardjob backfill`): FireTime is that fire.
	KindBackfill Kind = "backfill"
)

// ShardingContext describes one execution of one item.
type ShardingContext struct {
	// JobName is the job's name.
	JobName string
	// TaskID identifies the fire across the cluster:
	// "{job}@{fire time in unix ms}".
	TaskID string
	// FireTime is the scheduled time of the fire this execution belongs to
	// (the same on every instance). For misfire and failover runs it is the
	// earliest fire the run makes up for.
	FireTime time.Time
	// Through is the latest scheduled fire the execution stands for:
	// FireTime for a fire or a trigger; for a misfire or failover run, the
	// last fire due when the item was reserved for it. The run makes up for
	// every fire from FireTime through Through, and no other execution does
	// for those (unless an instance crashed first: see docs/guarantees.md,
	// and MayHaveRunThrough for which).
	Through time.Time
	// ShardingTotalCount is the job's item count.
	ShardingTotalCount int
	// Item is the sharding item, 0..ShardingTotalCount-1.
	Item int
	// ItemParameter is the item's entry in ShardingItemParameters.
	ItemParameter string
	// ItemKey is the item's key, for a job whose items come from data
	// (ItemLister): the key the item has in the list in force at
	// FireTime. "" for other jobs (an item without a key is not run).
	ItemKey string
	// JobParameter is the job's JobParameter.
	JobParameter string
	// Kind says why this execution happens.
	Kind Kind
	// ServerID is the id of the server executing the item.
	ServerID string
	// ParentErr, for a job that runs after others (Config.After) with
	// OnParentFailure ParentRun, says why its parents' fires did not all
	// succeed (it wraps ErrParentFailed); nil when they did. The parents'
	// fires are this run's: FireTime through Through.
	ParentErr error
	// MayHaveRunThrough, when not zero, says that the fires from FireTime
	// through it may already have run, wholly or in part: this is a
	// failover run taking the item over from an owner that crashed, lost
	// its session or was cut short by a shutdown's deadline while it may
	// have been running them — a run in flight, or one whose completion
	// was itself in flight (for a job that opted into records written
	// behind, Config.RecordInterval, any run of that interval). A job whose
	// side effects must not repeat (an invoice, an e-mail) checks its own
	// records for those fires only; the fires after it, through Through,
	// did not run. Zero for every other run: a scheduled fire, a trigger, a
	// make-up of fires missed here or handed over at a leave (their
	// previous runs are in the item's record, which the run was narrowed
	// by). See MayHaveRun.
	MayHaveRunThrough time.Time
	// Attempt counts the tries of this fire's item run: 1 for the first,
	// 2 for the first retry after a failure (Config.Retry), and so on. A
	// fire handed over at a shutdown during a retry's wait (with Failover)
	// continues the count on its next owner; after a crash or a lost
	// session the fire's next run starts at 1 again (docs/guarantees.md).
	Attempt int

	owner *ownership
}

// MayHaveRun reports whether fire, one of the fires this execution stands
// for (FireTime through Through), may already have run (see
// MayHaveRunThrough).
func (sc ShardingContext) MayHaveRun(fire time.Time) bool {
	return !sc.MayHaveRunThrough.IsZero() && !fire.Before(sc.FireTime) && !fire.After(sc.MayHaveRunThrough)
}

// StillOwner returns nil if this instance still owns the item: its
// registry session is live, its lease current on the monotonic clock, and
// the execution not cancelled. Call it right before a side effect; a process
// that was frozen past its session timeout learns here that it must stop,
// even before its context is cancelled. The error wraps
// [regcenter.ErrSessionLost] or the context's error.
func (sc ShardingContext) StillOwner() error {
	if sc.owner == nil {
		return nil
	}
	return sc.owner.check()
}

type ownership struct {
	sess *regcenter.Session
	ctx  context.Context
}

func (o *ownership) check() error {
	if err := o.sess.Check(); err != nil {
		return fmt.Errorf("%w: %w", ErrNotOwner, err)
	}
	if err := o.ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrNotOwner, context.Cause(o.ctx))
	}
	return nil
}
