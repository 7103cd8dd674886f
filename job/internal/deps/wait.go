package deps

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/internal/parallel"
	"github.com/shardjob/shardjob/job/internal/schedule"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
)

// poll is how often a waiting run reads its parents' records.
const poll = 100 * time.Millisecond

// LastFireWait bounds the wait for the parents of a dependent's last fire
// (a calendar's limit or end), which has no next fire to wait until, when
// the job sets no timeout of its own.
const LastFireWait = time.Hour

// Bound is how long a run of a dependent's fires through last waits for
// its parents: timeout, when set (more than 0); else until the
// dependent's next fire after last by sched, and at least a second from
// now; or LastFireWait when last is its last fire.
func Bound(timeout time.Duration, sched cron.Schedule, last, now time.Time) time.Duration {
	if timeout > 0 {
		return timeout
	}
	if next := sched.Next(last); !next.IsZero() {
		return max(time.Second, next.Sub(now))
	}
	return LastFireWait
}

// Parent is what a wait reads of a parent job as added here: where its
// records are, its number of items, and its schedule, whose jitter makes
// its fires of the nominal times waited for.
type Parent struct {
	Paths    layout.Job
	Items    int
	Schedule cron.Schedule
}

// Wait is one run's wait for its parents: the fires it waits for are
// those of nominal times (before jitter: schedule.NominalFire) First
// through Last, of every parent, on every item.
type Wait struct {
	// Parents names the jobs waited for, in the order they are read.
	Parents []string
	// Parent returns what is read of the parent named, at each poll; an
	// error ends the wait with it, as the parent's failure.
	Parent func(name string) (Parent, error)
	// First and Last are the nominal times of the fires waited for.
	First, Last time.Time
	// Fire is the dependent's own first fire of the range, which the
	// timeout's error names.
	Fire time.Time
	// Timeout bounds the wait.
	Timeout time.Duration
}

// Await waits until every parent of w has completed, on every item, its
// fires of w's nominal times, reading their completion records every
// poll, or until w.Timeout passes or ctx ends. It returns nil when they
// all succeeded, else why not: which parent's run failed (its item and
// fire), an error of w.Parent, that the timeout came first, or that ctx
// ended (with its cause). Package job wraps each in its ErrParentFailed.
// A read that fails is logged on log at debug level and read again at
// the next poll.
func Await(ctx context.Context, rc regcenter.Center, log *slog.Logger, w Wait) error {
	ctx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()
	for {
		done, err := parentsDone(ctx, rc, w)
		if done {
			return err
		}
		if err != nil && ctx.Err() == nil {
			log.Debug("reading the parents' records", "err", err)
		}
		select {
		case <-ctx.Done():
			if context.Cause(ctx) == context.DeadlineExceeded || errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("%s had not completed the fire of %s (this job's fire %s) on every item within %v",
					strings.Join(w.Parents, ", "), fireText(w.First), fireText(w.Fire), w.Timeout)
			}
			return fmt.Errorf("stopped waiting for %s: %w", strings.Join(w.Parents, ", "), context.Cause(ctx))
		case <-time.After(poll):
		}
	}
}

// parentsDone reads every parent's completion records once: done when
// every item of every parent covers its fires of the nominal times
// w.First through w.Last; err then says which parent's run failed, if
// one did. Not done, err is a read that failed.
func parentsDone(ctx context.Context, rc regcenter.Center, w Wait) (bool, error) {
	var failed error
	for _, p := range w.Parents {
		pa, err := w.Parent(p)
		if err != nil {
			return true, err
		}
		sched := pa.Schedule
		first, last := schedule.JitteredFire(sched, w.First), schedule.JitteredFire(sched, w.Last)
		n := pa.Items
		marks := make([]stored.Completed, n)
		found := make([]bool, n)
		errs := make([]error, n)
		parallel.Each(n, 32, func(i int) {
			data, _, err := rc.Get(ctx, pa.Paths.ItemNode(i, layout.Completed))
			if errors.Is(err, regcenter.ErrNoNode) {
				return
			}
			if err != nil {
				errs[i] = err
				return
			}
			m, err := stored.DecodeCompleted(data)
			found[i], marks[i] = err == nil, m
		})
		if err := errors.Join(errs...); err != nil {
			return false, err
		}
		for i := range n {
			if !found[i] {
				return false, nil
			}
			c := marks[i].Cover()
			// Zero: covered through the schedule's last fire.
			if u := c.UncoveredFrom(sched, first); !u.IsZero() && !u.After(last) {
				return false, nil // a fire of the range not run yet on item i
			}
			// The result of the fires waited for, not of the latest run:
			// later fires may have run since.
			if at, msg := marks[i].Failure(first, last); msg != "" && failed == nil {
				failed = fmt.Errorf("%s item %d, fire %s: %s", p, i, fireText(at), msg)
			}
		}
	}
	return true, failed
}

// fireText prints a fire's time to the millisecond, jitter applied: fire
// times are kept in milliseconds, and whole seconds hide a jitter.
func fireText(at time.Time) string { return at.Format("2006-01-02T15:04:05.000Z07:00") }
