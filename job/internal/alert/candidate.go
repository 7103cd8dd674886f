package alert

import (
	"context"
	"log/slog"
	"time"

	"github.com/shardjob/shardjob/election"
	"github.com/shardjob/shardjob/regcenter"
)

// Candidate is this instance's candidacy for the namespace's alert
// checker: the election on LeaderLatch, and the Checker it runs while
// elected. It holds no lock of its own (the election and the checker hold
// theirs).
type Candidate struct {
	rc      regcenter.Center
	elect   *election.Election
	timeout time.Duration
	log     *slog.Logger
}

// CandidateOptions are what a Candidate is made with.
type CandidateOptions struct {
	// Checker is run, on a goroutine started by Spawn, each time this
	// instance is elected, until the leadership or Life ends.
	Checker *Checker
	Server  string
	// Spawn starts f on a goroutine its caller owns and waits for at its
	// shutdown; it may refuse (false) once shutdown began.
	Spawn func(f func()) bool
	Life  context.Context
	// Timeout bounds the registry work of joining the election.
	Timeout time.Duration
	Log     *slog.Logger
}

// NewCandidate makes the candidate; it joins nothing until Campaign.
func NewCandidate(rc regcenter.Center, o CandidateOptions) *Candidate {
	c := &Candidate{rc: rc, timeout: o.Timeout, log: o.Log}
	c.elect = election.New(rc, LeaderLatch, LeaderHost, o.Server, election.Callbacks{
		OnElected: func(ctx context.Context) {
			o.Spawn(func() {
				ctx, cancel := context.WithCancel(ctx)
				defer cancel()
				stop := context.AfterFunc(o.Life, cancel)
				defer stop()
				o.Log.Info("checking the namespace's alerts", "every", o.Checker.Interval)
				o.Checker.Run(ctx)
			})
		},
	}, o.Log)
	return c
}

// Campaign joins (or rejoins, under a new session) the checker's
// election; a failure is logged, for the caller to try again at the next
// session or reconcile. A nil Candidate (an instance that does not
// check) joins nothing.
func (c *Candidate) Campaign(ctx context.Context) {
	if c == nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	err := c.rc.EnsurePath(cctx, LeaderLatch)
	if err == nil {
		err = c.elect.Campaign(cctx)
	}
	if err != nil {
		c.log.Warn("joining the alert checker's election", "err", err)
	}
}

// Leave resigns the checker's election within ctx and closes it; a nil
// Candidate has nothing to leave.
func (c *Candidate) Leave(ctx context.Context) {
	if c == nil {
		return
	}
	if err := c.elect.Resign(ctx); err != nil {
		c.log.Debug("leaving the alert checker's election", "err", err)
	}
	c.elect.Close()
}
