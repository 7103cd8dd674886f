package prepare

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

// Steps are what preparing a job does on this instance, as package job
// gives them; they are set once, before the Prep is used (Prepare, Sync,
// Now, CampaignAgain).
type Steps struct {
	// WatchItems arms the watch of the job's disabled items.
	WatchItems func(ctx context.Context)
	// Campaign joins the job's election (election.Election.Campaign); its
	// error is returned naming Job.
	Campaign func(ctx context.Context) error
	Job      string
	// Session is the registry's session of now; Timeout bounds a
	// preparation made by Sync or Now.
	Session func() *regcenter.Session
	Timeout time.Duration
	// Go runs fn on a goroutine of the job's, reporting false if it
	// stops.
	Go  func(fn func()) bool
	Log *slog.Logger
}

// Prepare makes this instance ready to run the job's items (Do): it
// watches the disabled items and joins the election.
func (p *Prep) Prepare(ctx context.Context) error {
	return p.Do(func() { p.Steps.WatchItems(ctx) }, func() error { return p.campaign(ctx) })
}

// campaign joins the job's election (Steps.Campaign).
func (p *Prep) campaign(ctx context.Context) error {
	if err := p.Steps.Campaign(ctx); err != nil {
		return fmt.Errorf("job %q: %w", p.Steps.Job, err)
	}
	return nil
}

// Sync is Prepare bounded by Timeout under the session of now, for a run
// about to start; once prepared it returns nil at once.
func (p *Prep) Sync() error {
	if p.Done() {
		return nil
	}
	ctx, cancel := context.WithTimeout(p.Steps.Session().Ctx(), p.Steps.Timeout)
	defer cancel()
	return p.Prepare(ctx)
}

// Now is Sync on a goroutine of its own (Go); a failure is logged and
// left to whatever needs the job next (a fire, a trigger, a new session,
// the reconcile loop).
func (p *Prep) Now() {
	if p.Done() {
		return
	}
	p.Steps.Go(func() {
		sess := p.Steps.Session()
		ctx, cancel := context.WithTimeout(sess.Ctx(), p.Steps.Timeout)
		defer cancel()
		if err := p.Prepare(ctx); err != nil && sess.Err() == nil {
			p.Steps.Log.Warn("preparing to run", "err", err)
		}
	})
}

// CampaignAgain joins the election under the current session if this
// instance takes part in it (Again: re-registration after a new session).
func (p *Prep) CampaignAgain(ctx context.Context) error {
	return p.Again(func() error { return p.campaign(ctx) })
}
