// Package jobtest helps test code that runs shardjob jobs: [Clock], a fake
// clock that a scheduler fires by ([job.WithClock]), so that a test makes a
// job fire by moving the clock, at exactly the times it chooses, without
// sleeping until they come or depending on how fast the machine is.
//
// A scheduler on a fake clock still coordinates through a real registry,
// on real time (see [job.WithClock]): give it one — an embedded member
// (regcenter/embedded) needs nothing installed — and give every wait in
// the test a deadline.
package jobtest

import (
	"context"
	"sync"
	"time"

	"github.com/shardjob/shardjob/job"
)

// Clock is a fake [job.Clock]: its time moves only when the test moves it
// (Advance, Set), and then the timers it passes fire, each f on a
// goroutine of its own, as the real clock's do. Its methods are safe for
// concurrent use.
//
// Move the clock one fire at a time, once the previous fire has ended (a
// fire listener's FireEnded: [job.WithFireListener]) and the scheduler
// waits for the next (WaitForTimers). A fire that finds its items still
// busy with the one before is made up afterwards as a misfire run, and a
// clock moved past several of a job's fires at once is to the scheduler a
// process that was paused meanwhile: the fires missed run as one make-up
// run from the first of them, as after a real pause.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	pending map[*timer]struct{}
	changed chan struct{} // closed, and replaced, when a timer is set
}

// NewClock returns a fake clock reading start.
func NewClock(start time.Time) *Clock {
	return &Clock{now: start, pending: map[*timer]struct{}{}, changed: make(chan struct{})}
}

var _ job.Clock = (*Clock)(nil)

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock d forward (back, if d is negative) and fires the
// timers due by the new time.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.move(c.now.Add(d))
}

// Set moves the clock to t and fires the timers due by then. Moving it
// back fires nothing.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.move(t)
}

// move sets the time to t, with c.mu held, which it releases before it
// fires the timers due: their goroutines are started in the order of their
// times (and run in whatever order).
func (c *Clock) move(t time.Time) {
	c.now = t
	var due []*timer
	for tm := range c.pending {
		if !tm.at.After(t) {
			due = append(due, tm)
			delete(c.pending, tm)
		}
	}
	sortTimers(due)
	c.mu.Unlock()
	for _, tm := range due {
		go tm.f()
	}
}

// sortTimers orders ts by their times (a few at a time: insertion).
func sortTimers(ts []*timer) {
	for i := 1; i < len(ts); i++ {
		for j := i; j > 0 && ts[j].at.Before(ts[j-1].at); j-- {
			ts[j], ts[j-1] = ts[j-1], ts[j]
		}
	}
}

// AfterFunc calls f on a goroutine of its own once the clock reads at or
// later: at once if it does already, otherwise when Advance or Set moves
// it there. It implements [job.Clock].
func (c *Clock) AfterFunc(at time.Time, f func()) job.Timer {
	tm := &timer{c: c, f: f}
	tm.Reset(at)
	return tm
}

// Timers returns how many timers wait for the clock to move: set, not
// yet fired, not stopped.
func (c *Clock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// WaitForTimers waits until at least n timers wait for the clock to move,
// and returns nil; or ctx's error if ctx ends first. A scheduler that has
// a fire ahead waits for it on one timer, whatever its number of jobs, so
// that WaitForTimers(ctx, 1) after Start, or after a fire has run, returns
// once the scheduler waits for its next fire: the moment to move the
// clock. A fire's run waits on a timer of its own when the clock stands
// between the moment the fire claims its items (job.WithFireLead ahead of
// its time) and its time; a job with a fire more than a minute ahead, and
// without failover, holds one until it joins its election a minute before.
func (c *Clock) WaitForTimers(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		have, changed := len(c.pending), c.changed
		c.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// timer is a call of Clock.AfterFunc; it implements job.Timer.
type timer struct {
	c  *Clock
	f  func()
	at time.Time // under c.mu
}

// Stop takes the timer off the clock, and reports whether it was on it.
func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	_, ok := t.c.pending[t]
	delete(t.c.pending, t)
	return ok
}

// Reset sets the timer for at, firing it at once if the clock reads at
// already, and reports whether it was waiting before.
func (t *timer) Reset(at time.Time) bool {
	c := t.c
	c.mu.Lock()
	_, was := c.pending[t]
	t.at = at
	if at.After(c.now) {
		c.pending[t] = struct{}{}
		close(c.changed)
		c.changed = make(chan struct{})
		c.mu.Unlock()
		return was
	}
	delete(c.pending, t)
	c.mu.Unlock()
	go t.f()
	return was
}
