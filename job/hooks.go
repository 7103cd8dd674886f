package job

import (
	"context"
	"fmt"
	"time"

	"github.com/shardjob/shardjob/internal/jobhook"
	"github.com/shardjob/shardjob/job/internal/reshard"
)

// Hooks for job types built outside this package (package jobtype and its
// subpackages, package errhandler): the few things they need from the
// scheduler that a job cannot do through its ShardingContext. They reach
// them through internal/jobhook; script.Reap and errhandler.NewStop are
// their public faces.

func init() {
	jobhook.OweMisfire = func(s any, ctx context.Context, name string, item int, since time.Time) error {
		sched, err := hookScheduler(s)
		if err != nil {
			return err
		}
		return sched.oweMisfire(ctx, name, item, since)
	}
	jobhook.Pause = func(s any, ctx context.Context, name string) error {
		sched, err := hookScheduler(s)
		if err != nil {
			return err
		}
		return sched.pause(ctx, name)
	}
}

// hookScheduler is the scheduler a hook was called with.
func hookScheduler(s any) (*Scheduler, error) {
	sched, ok := s.(*Scheduler)
	if !ok || sched == nil {
		return nil, fmt.Errorf("%w: %T is not a scheduler", ErrInvalidOption, s)
	}
	return sched, nil
}

// oweMisfire records in the registry that item of job name owes a run since
// the fire at since: the item's execution/{item}/misfire node, which the
// instance that holds the item at its next fire reads (every item is read
// at an instance's first fire) and pays with one make-up run, as it pays a
// debt left by an instance that died. A node present already keeps the
// earlier of the two fires. Job types call it for executions they know
// were cut short by the death of an earlier process of this server (see
// script.Reap); call it after Add, before or after Start. The job must be
// added ([ErrUnknownJob]) and item in range ([ErrInvalidConfig]).
func (s *Scheduler) oweMisfire(ctx context.Context, name string, item int, since time.Time) error {
	r := s.runner(name)
	if r == nil {
		return fmt.Errorf("%w: %q", ErrUnknownJob, name)
	}
	cfg := r.config()
	if item < 0 || item >= cfg.ShardingTotalCount {
		return fmt.Errorf("%w: job %q has no item %d", ErrInvalidConfig, name, item)
	}
	if cfg.skipsMissed() || cfg.Unmonitored {
		return nil // the job's policy drops such fires
	}
	return reshard.OweEarliest(ctx, r.rc, r.paths, item, since)
}

// pause sets the paused flag of job name on this instance's server
// (servers/{server}/paused), as `shardjob pause SERVER --job NAME` does:
// this instance stops firing the job, its items stay assigned and wait,
// and the flag survives restarts until an operator resumes the server. The
// stop error handler calls it after too many consecutive failures.
func (s *Scheduler) pause(ctx context.Context, name string) error {
	r := s.runner(name)
	if r == nil {
		return fmt.Errorf("%w: %q", ErrUnknownJob, name)
	}
	return r.flags.Pause(ctx)
}
