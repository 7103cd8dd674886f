package book

import (
	"time"

	"github.com/shardjob/shardjob/job/internal/fireplan"
)

// Job is what the book reads of a job's configuration, given with each
// call that reads it: a step takes the configuration its caller fires
// with, as the caller's stages do.
type Job struct {
	// Items is the job's item count: an item at or past it is no longer
	// the job's (an assignment from before the count shrank).
	Items int
	// Overlap is the policy for a fire that finds its item running here.
	Overlap fireplan.Overlap
	// SkipsMissed: the job drops missed fires, and nothing is owed.
	SkipsMissed bool
	// Schedule is the job's (nil: it did not compile; a make-up run then
	// stands for the fire it starts at alone, and records are not read
	// against it).
	Schedule fireplan.Schedule
}

// Kind is what a run is, as the book tells them apart.
type Kind uint8

const (
	// Fire is a scheduled fire.
	Fire Kind = iota
	// Misfire is a make-up run of fires owed here.
	Misfire
	// Failover is a run of another instance's debt, claimed from the
	// failover queue.
	Failover
	// Trigger is an operator's "run once now".
	Trigger
	// Backfill runs a past fire again for an operator's backfill: it
	// owes nothing when its item is busy (the backfill tries again), and
	// pays no debt.
	Backfill
)

// Recorded reports whether runs of k are the schedule's fires, written to
// the item's completed record: not a trigger's or a backfill's.
func (k Kind) Recorded() bool { return k != Trigger && k != Backfill }

// String is the kind's name, as package job names it.
func (k Kind) String() string {
	switch k {
	case Fire:
		return "fire"
	case Misfire:
		return "misfire"
	case Failover:
		return "failover"
	case Backfill:
		return "backfill"
	}
	return "trigger"
}

// Ran is a run that ended without being cut short, as its completion
// settles what it paid.
type Ran struct {
	Item int
	Kind Kind
	// Fire is the fire it ran as (a make-up run's first); Through the
	// latest fire it stood for (see UpTo).
	Fire, Through time.Time
}

// UpTo is the latest scheduled fire the run makes up for: its own fire,
// or for a misfire or failover run every fire due when its item was
// reserved.
func (r Ran) UpTo() time.Time {
	if (r.Kind == Misfire || r.Kind == Failover) && r.Through.After(r.Fire) {
		return r.Through
	}
	return r.Fire
}

// Covers reports whether the run makes up for a debt owed since since
// (zero: none).
func (r Ran) Covers(since time.Time) bool {
	if (r.Kind == Misfire || r.Kind == Failover) && !since.IsZero() && !r.Through.IsZero() && since.After(r.Through) {
		return false // a debt of fires after the make-up run stands
	}
	return since.IsZero() || !r.Fire.After(since) || r.Kind == Misfire
}

// Owed is a run this instance owes, for a leave to hand over: its item
// and the earliest fire it is owed since.
type Owed struct {
	Item  int
	Since time.Time
}
