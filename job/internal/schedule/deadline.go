package schedule

import (
	"time"

	"github.com/robfig/cron/v3"
)

// Deadline is a starting deadline (job.Config.StartingDeadline) applied
// at one moment: a make-up run runs only the fires from its cutoff on.
type Deadline struct {
	sched  cron.Schedule
	cutoff time.Time
	first  time.Time // the first fire within the deadline (zero: none)
}

// NewDeadline is the deadline d of sched at now.
func NewDeadline(sched cron.Schedule, now time.Time, d time.Duration) Deadline {
	cutoff := now.Add(-d)
	return Deadline{sched: sched, cutoff: cutoff, first: sched.Next(cutoff.Add(-time.Millisecond))}
}

// Expiry is what a starting deadline does to one item of a make-up run.
type Expiry struct {
	// Within: the run starts within the deadline, and nothing changes.
	Within bool
	// Settle: no fire the run stands for is within the deadline: the
	// item is settled without running.
	Settle bool
	// From is the run's first fire, the first within the deadline, when
	// neither Within nor Settle.
	From time.Time
	// Expired counts the fires dropped as expired; MayHaveRun those
	// dropped that a previous owner may have run already, which did not
	// expire if they ran.
	Expired, MayHaveRun int
}

// Within reports whether a run since since starts within the deadline,
// and so is left as it is.
func (dl Deadline) Within(since time.Time) bool { return !since.Before(dl.cutoff) }

// Item is the deadline's decision for an item whose run stands for the
// fires since through through, of which those through mayHaveRun (zero:
// none) may have run already.
func (dl Deadline) Item(since, through, mayHaveRun time.Time) Expiry {
	if dl.Within(since) {
		return Expiry{Within: true}
	}
	var e Expiry
	stop := dl.first
	if stop.IsZero() || stop.After(through) {
		stop = dl.sched.Next(through)
	}
	from := since
	if !mayHaveRun.IsZero() {
		// since through mayHaveRun may have run: dropped, not expired.
		from = dl.sched.Next(mayHaveRun)
		if from.IsZero() || (!stop.IsZero() && from.After(stop)) {
			from = stop
		}
		e.MayHaveRun = CountFires(dl.sched, since, from)
	}
	if !from.IsZero() && (stop.IsZero() || from.Before(stop)) {
		e.Expired = CountFires(dl.sched, from, stop)
	}
	if dl.first.IsZero() || dl.first.After(through) {
		e.Settle = true
		return e
	}
	e.From = dl.first
	return e
}
