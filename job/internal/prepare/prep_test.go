package prepare

import (
	"errors"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job/internal/trigger"
)

func TestDoOnceAndAfterAFailure(t *testing.T) {
	var p Prep
	watches, campaigns := 0, 0
	fail := errors.New("no quorum")
	campaign := func(err error) func() error {
		return func() error { campaigns++; return err }
	}
	watch := func() { watches++ }
	if err := p.Again(campaign(nil)); err != nil || campaigns != 0 {
		t.Fatalf("Again before Do: %v, %d campaigns; want none", err, campaigns)
	}
	if err := p.Do(watch, campaign(fail)); !errors.Is(err, fail) || p.Done() {
		t.Fatalf("a failed campaign: %v, done %v", err, p.Done())
	}
	if err := p.Again(campaign(nil)); err != nil || campaigns != 2 {
		t.Fatalf("Again once Do began: %v, %d campaigns; want 2", err, campaigns)
	}
	if err := p.Do(watch, campaign(nil)); err != nil || !p.Done() {
		t.Fatalf("Do again: %v, done %v", err, p.Done())
	}
	if err := p.Do(watch, campaign(fail)); err != nil || watches != 2 || campaigns != 3 {
		t.Fatalf("Do once done: %v, %d watches, %d campaigns; want nil, 2, 3", err, watches, campaigns)
	}
}

// fakeClock arranges calls and runs them when told.
type fakeClock struct{ timers []*fakeTimer }

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func (t *fakeTimer) Stop() bool              { was := !t.stopped; t.stopped = true; return was }
func (t *fakeTimer) Reset(at time.Time) bool { t.at, t.stopped = at, false; return true }

func (c *fakeClock) Now() time.Time { return time.Time{} }

func (c *fakeClock) AfterFunc(at time.Time, f func()) trigger.Timer {
	t := &fakeTimer{at: at, f: f}
	c.timers = append(c.timers, t)
	return t
}

func TestBefore(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	next := now.Add(5 * time.Minute)
	for _, c := range []struct {
		what     string
		next     time.Time
		ahead    time.Duration
		stopping bool
		done     bool
		timerAt  time.Time // zero: no timer
		ranNow   bool
	}{
		{"ahead of a later fire", next, time.Minute, false, false, next.Add(-time.Minute), false},
		{"the time has come", next, 10 * time.Minute, false, false, time.Time{}, true},
		{"no next fire", time.Time{}, time.Minute, false, false, time.Time{}, false},
		{"stopping", next, time.Minute, true, false, time.Time{}, false},
		{"prepared", next, time.Minute, false, true, time.Time{}, false},
	} {
		var p Prep
		if c.done {
			_ = p.Do(func() {}, func() error { return nil })
		}
		clk := &fakeClock{}
		ran := false
		p.Before(clk, now, c.next, c.ahead, func() bool { return c.stopping }, func() { ran = true })
		if ran != c.ranNow {
			t.Errorf("%s: ran at once %v, want %v", c.what, ran, c.ranNow)
		}
		switch {
		case c.timerAt.IsZero() && len(clk.timers) != 0:
			t.Errorf("%s: a timer arranged", c.what)
		case !c.timerAt.IsZero() && (len(clk.timers) != 1 || !clk.timers[0].at.Equal(c.timerAt)):
			t.Errorf("%s: timers %v, want one at %v", c.what, clk.timers, c.timerAt)
		}
	}
}

func TestBeforeReplacesAndStopCancels(t *testing.T) {
	var p Prep
	clk := &fakeClock{}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	never := func() bool { return false }
	p.Before(clk, now, now.Add(time.Hour), time.Minute, never, func() {})
	p.Before(clk, now, now.Add(2*time.Hour), time.Minute, never, func() {})
	if len(clk.timers) != 2 || !clk.timers[0].stopped || clk.timers[1].stopped {
		t.Fatalf("the second Before: the first timer stopped %v, the second %v", clk.timers[0].stopped, clk.timers[1].stopped)
	}
	p.Stop()
	if !clk.timers[1].stopped {
		t.Fatal("Stop left the timer")
	}
	// Stopping, a Before still cancels the timer it finds.
	p.Before(clk, now, now.Add(time.Hour), time.Minute, never, func() {})
	p.Before(clk, now, now.Add(time.Hour), time.Minute, func() bool { return true }, func() {})
	if len(clk.timers) != 3 || !clk.timers[2].stopped {
		t.Fatal("a Before while stopping left the timer found")
	}
}
