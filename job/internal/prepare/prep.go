package prepare

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/job/internal/trigger"
)

// Prep is whether this instance is ready to run a job's items: it watches
// the job's disabled items and takes part in its election. The zero Prep
// is not prepared. Its locks are taken only in its methods.
type Prep struct {
	// done is set once Do has succeeded.
	done atomic.Bool
	// mu serialises Do; campaigning, under it, is set once Do has begun,
	// so that re-registration joins the election too (Again).
	mu          sync.Mutex
	campaigning bool
	// timer, under timerMu, runs the preparation ahead of the next fire.
	timerMu sync.Mutex
	timer   trigger.Timer // on the scheduler's clock

	// Steps are what the preparation does, set before it is used.
	Steps Steps
}

// Done reports whether Do has succeeded.
func (p *Prep) Done() bool { return p.done.Load() }

// Do prepares, once: under the preparation's lock it notes the
// preparation begun, calls watch (the disabled items' watch) and then
// campaign (joining the election). A campaign that fails leaves it
// unprepared, for the next Do. Once prepared, it returns nil at once.
func (p *Prep) Do(watch func(), campaign func() error) error {
	if p.done.Load() {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done.Load() {
		return nil
	}
	p.campaigning = true
	watch()
	if err := campaign(); err != nil {
		return err
	}
	p.done.Store(true)
	return nil
}

// Again calls campaign, under the preparation's lock, if Do has begun
// (re-registration under a new session joins the election again).
func (p *Prep) Again(campaign func() error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.campaigning {
		return nil
	}
	return campaign()
}

// Serially runs fn under the preparation's lock, one at a time with Do,
// Again and one another.
func (p *Prep) Serially(fn func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fn()
}

// Before arranges for fn to run ahead before next, on clock (now is its
// reading): on a timer, or at once if that time has passed. Nothing is
// arranged once prepared, for a zero next, or once stopping reports true,
// which is checked under the timer's lock: a stop that sets what stopping
// reads before it calls Stop leaves no timer behind. A timer arranged
// before is cancelled.
func (p *Prep) Before(clock trigger.Clock, now, next time.Time, ahead time.Duration, stopping func() bool, fn func()) {
	if p.done.Load() || next.IsZero() {
		return
	}
	at := next.Add(-ahead)
	d := at.Sub(now)
	p.timerMu.Lock()
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	if stopping() {
		p.timerMu.Unlock()
		return
	}
	if d > 0 {
		p.timer = clock.AfterFunc(at, fn)
	}
	p.timerMu.Unlock()
	if d <= 0 {
		fn()
	}
}

// Stop cancels a pending Before.
func (p *Prep) Stop() {
	p.timerMu.Lock()
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	p.timerMu.Unlock()
}
