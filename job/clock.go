package job

import (
	"fmt"
	"time"

	"github.com/shardjob/shardjob/job/internal/trigger"
)

// Clock is the time a scheduler fires by (see [WithClock]): the default is
// the host's wall clock; a test gives a fake one, such as
// jobtest.NewClock, to drive fires without waiting for them.
//
// A Clock's timers are set for a time on the clock, not for a duration, so
// that a fake clock moved between reading the time and arming a timer
// cannot make the timer late: one set for a time the clock has passed
// fires at once.
type Clock interface {
	// Now returns the clock's current time.
	Now() time.Time
	// AfterFunc calls f in its own goroutine once the clock reads at or
	// later (at once if it does already), and returns a Timer that stops
	// or moves the call.
	AfterFunc(at time.Time, f func()) Timer
}

// Timer is a call arranged by [Clock.AfterFunc].
type Timer interface {
	// Stop prevents the call if it has not started yet, and reports
	// whether it did; the call may already be under way when it returns
	// false.
	Stop() bool
	// Reset arranges the call for at instead, whether it was pending,
	// stopped or made already, and reports whether it was pending.
	Reset(at time.Time) bool
}

// WithClock makes the scheduler fire by c instead of the host's wall
// clock. c governs the fire schedule: the computation of each fire's
// time (cron, time zone, calendar, Jitter, Start, End and Limit,
// PausedUntil), the wait until the next fire and its lead, the catch-up of
// fires missed, the StartingDeadline of make-up runs, and the time a fire
// reports (ShardingContext.FireTime); deferred completion records
// (RecordInterval) age by it too. A fake clock thus makes fires happen
// exactly when the test moves it there, and never otherwise.
//
// The registry's protocol stays on real time whatever the clock: session
// timeouts and leases, elections, the reshard timeout, retries and
// timeouts of registry calls, the reconcile loop, health checks and load
// scores. A test driving a fake clock still needs a live registry (one
// embedded in the process will do: regcenter/embedded) and gives its waits
// real deadlines.
//
// MaxTimeDiff compares the host's real clock, not c, with the registry's:
// a clock set to another year still fires, and a job with MaxTimeDiff
// still refuses to fire on a host whose own clock is off.
func WithClock(c Clock) Option {
	return func(o *options) error {
		if c == nil {
			return fmt.Errorf("%w: nil clock", ErrInvalidOption)
		}
		o.clock, o.now, o.hostNow = c, c.Now, nil
		return nil
	}
}

// wallClock is a Clock whose time is now (time.Now by default) and whose
// timers run on the host's monotonic clock: a timer for at waits for the
// difference between at and now's reading when it is set.
type wallClock struct{ now func() time.Time }

// clockOf is the Clock reading now, with real timers.
func clockOf(now func() time.Time) Clock {
	if now == nil {
		now = time.Now
	}
	return wallClock{now: now}
}

func (c wallClock) Now() time.Time { return c.now() }

func (c wallClock) AfterFunc(at time.Time, f func()) Timer {
	return wallTimer{t: time.AfterFunc(at.Sub(c.now()), f), now: c.now}
}

type wallTimer struct {
	t   *time.Timer
	now func() time.Time
}

func (t wallTimer) Stop() bool { return t.t.Stop() }

func (t wallTimer) Reset(at time.Time) bool { return t.t.Reset(at.Sub(t.now())) }

// fireClock is the clock the scheduler fires by: WithClock's, or the wall
// clock (read through opts.now, which a test may skew).
func (s *Scheduler) fireClock() Clock {
	if s.opts.clock != nil {
		return s.opts.clock
	}
	return clockOf(s.opts.now)
}

// hostClock is the host's clock that MaxTimeDiff compares with the
// registry's: the real one, unless a test skews it.
func (s *Scheduler) hostClock() time.Time {
	if s.opts.hostNow != nil {
		return s.opts.hostNow()
	}
	return time.Now()
}

// triggerClock is a Clock as the trigger takes one: the same clock, its
// timers the trigger's.
type triggerClock struct{ Clock }

func (c triggerClock) AfterFunc(at time.Time, f func()) trigger.Timer {
	return c.Clock.AfterFunc(at, f)
}
