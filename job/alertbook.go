package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/alert"
	"github.com/shardjob/shardjob/regcenter"
)

// The scheduler's side of the alerts (alert.go): its options, the book
// told of runs, the namespace checker's election, and raising an alert.

// DefaultAlertCheck is the alert checker's interval when WithAlertCheck is
// not given.
const DefaultAlertCheck = 30 * time.Second

// alertTimeout bounds an alert's registry work and its handler's call.
const alertTimeout = 10 * time.Second

// WithAlertDefault sets the namespace default of Config.Alert: jobs added
// here whose config sets no alert use p. Each instance applies its own
// default, so give every instance of a namespace the same one. Its bounds
// are checked as a job's are (not negative; 0 or at least MinInterval),
// but not against a schedule.
func WithAlertDefault(p AlertPolicy) Option {
	return func(o *options) error {
		if err := p.Validate(); err != nil {
			return fmt.Errorf("%w: alert default: %w", ErrInvalidOption, err)
		}
		o.alertDefault = p
		return nil
	}
}

// Validate checks p's bounds without a schedule: not negative, and each 0
// or at least MinInterval. The error wraps ErrInvalidConfig and names the
// field (alert.late, alert.notRunFor). Config.Validate checks a job's
// policy against its schedule too.
func (p AlertPolicy) Validate() error {
	var errs []error
	(Config{Alert: p}).alertProblems(func(key string, kind error, subject, detail string) *configError {
		e := &configError{key: key, kind: kind, subject: subject, detail: detail}
		errs = append(errs, e)
		return e
	}, nil, time.Time{})
	return joinConfigErrors(errs)
}

// MinAlertCheck is the shortest interval WithAlertCheck takes.
const MinAlertCheck = 10 * time.Millisecond

// WithAlertCheck sets how often the namespace's alert checker looks for
// jobs not run (AlertPolicy.NotRunFor), when this instance is the one
// elected to check (default DefaultAlertCheck, at least MinAlertCheck). A
// negative d keeps this instance out of the election: it never checks.
func WithAlertCheck(d time.Duration) Option {
	return func(o *options) error {
		if d >= 0 && d < MinAlertCheck {
			return fmt.Errorf("%w: alert check interval %v: at least %v (negative turns the checker off)", ErrInvalidOption, d, MinAlertCheck)
		}
		o.alertCheck = d
		return nil
	}
}

// alertPolicy is cfg's policy in force here: its own, or the default.
func (s *Scheduler) alertPolicy(cfg Config) alert.Policy {
	p := cfg.Alert
	if p.IsZero() {
		p = s.opts.alertDefault
	}
	return alert.Policy{Late: p.Late, NotRunFor: p.NotRunFor}
}

// alerting is the scheduler's alert state.
type alerting struct {
	book *alert.Book
	cand *alert.Candidate // nil: this instance does not check
}

// initAlerts makes the book and the checker's candidate (NewScheduler).
func (s *Scheduler) initAlerts() {
	clk := s.fireClock()
	s.alert.book = alert.NewBook(alert.Options{
		RC: s.rc, Now: s.opts.now, Server: s.opts.serverID, Timeout: alertTimeout, Log: s.log,
		AfterFunc: func(at time.Time, f func()) func() bool { return clk.AfterFunc(at, f).Stop },
		Raise:     s.raiseAlert,
	})
	if s.opts.alertCheck < 0 {
		return
	}
	every := s.opts.alertCheck
	if every == 0 {
		every = DefaultAlertCheck
	}
	s.alert.cand = alert.NewCandidate(s.rc, alert.CandidateOptions{
		Checker: &alert.Checker{RC: s.rc, Now: s.opts.now, Interval: every, Confirm: s.confirmNotRun,
			Raise: s.raiseAlert, Server: s.opts.serverID, Timeout: alertTimeout, Log: s.log},
		Server: s.opts.serverID, Spawn: s.spawn, Life: s.ctx, Timeout: s.opts.reshardTimeout, Log: s.log,
	})
}

// startAlerts starts the book's goroutine and joins the checker's
// election (Start); a failure to join is logged and tried again at the
// next session.
func (s *Scheduler) startAlerts(ctx context.Context) {
	s.spawn(func() { s.alert.book.Run(s.ctx) })
	s.alert.cand.Campaign(ctx)
}

// stopAlerts leaves the checker's election (Shutdown), within ctx.
func (s *Scheduler) stopAlerts(ctx context.Context) {
	rctx, cancel := cleanupContext(ctx, s.opts.reshardTimeout)
	defer cancel()
	s.alert.cand.Leave(rctx)
}

// confirmNotRun says whether job still exists with a not-run bound, by
// its config node: the checker's last look before reporting it.
func (s *Scheduler) confirmNotRun(ctx context.Context, job string) (bool, error) {
	data, _, err := s.rc.Get(ctx, layout.Job(job).Config())
	if errors.Is(err, regcenter.ErrNoNode) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	cfg, err := DecodeConfigContext(ctx, data)
	if err != nil {
		return true, nil // a bad node is not a reason to stay silent
	}
	return s.alertPolicy(cfg).NotRunFor > 0, nil
}

// raiseAlert tells the events, the history and the job's handler of r.
func (s *Scheduler) raiseAlert(ctx context.Context, r alert.Raised) {
	a := Alert{Kind: alertKind(r.Kind), Job: r.Job, Fire: r.Fire, Bound: r.Bound, Server: s.opts.serverID, At: s.opts.now(),
		Err: r.Err(ErrFireLate, ErrNotRun)}
	s.log.Warn("alert", "kind", a.Kind, "job", a.Job, "err", a.Err)
	s.emit(Event{Kind: a.Kind, Job: a.Job, Err: a.Err, Detail: a.Err.Error(), At: a.At})
	if run := s.runner(r.Job); run != nil {
		if h, ok := run.job.(AlertHandler); ok {
			hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), alertTimeout)
			defer cancel()
			if err := h.HandleAlert(hctx, a); err != nil {
				s.log.Warn("alert handler", "job", a.Job, "kind", a.Kind, "err", err)
			}
		}
	}
}

// AlertProblem is a job found late or not run by CheckAlerts.
type AlertProblem struct {
	// Kind is EventFireLate or EventNotRun.
	Kind EventKind `json:"kind"`
	// Job is the job concerned.
	Job string `json:"job"`
	// Fire is the late fire, or the job's last success known (zero: it
	// never ran).
	Fire time.Time `json:"fire"`
	// Bound is the policy's bound that was passed.
	Bound time.Duration `json:"bound"`
}

// CheckAlerts reads the namespace's alert index once, as a probe run from
// cron would (shardjob check): the jobs whose last success is older than
// their AlertPolicy.NotRunFor (with its eighth of slack, as the checker
// reads it) or that were reported not run and have not succeeded since,
// and the fires raised late within window before now. It writes nothing.
// It reads one node per job with an alert policy, and lists the late fires
// of those with a late bound.
func CheckAlerts(ctx context.Context, rc regcenter.Center, now time.Time, window time.Duration) ([]AlertProblem, error) {
	found, err := alert.Scan(ctx, rc, now, window)
	out := make([]AlertProblem, 0, len(found))
	for _, p := range found {
		out = append(out, AlertProblem{Kind: alertKind(p.Kind), Job: p.Job, Fire: p.Fire, Bound: p.Bound})
	}
	return out, err
}

// alertKind is the event kind of an alert of kind k.
func alertKind(k alert.Kind) EventKind {
	if k == alert.KindLate {
		return EventFireLate
	}
	return EventNotRun
}
