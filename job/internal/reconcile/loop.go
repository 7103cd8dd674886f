package reconcile

import (
	"context"
	"maps"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

// Job is one job as a round of the Loop sees it.
type Job struct {
	// Name is the job's name.
	Name string
	// Every is the job's reconcile interval; 0 or less is the Loop's
	// Default.
	Every time.Duration
	// Clock reports that the job fires only within a maximum clock
	// difference (MaxTimeDiff): the round measures the clock first.
	Clock bool
	// Round returns the job's round with what its last round kept (Seen,
	// the Loop's own, for this job); nil: none this time. It runs on the
	// Loop's goroutine.
	Round func(*Seen) *Round
}

// Loop is the scheduler's one repair loop, for every job: each job's Round
// once its interval passed since its last, the rounds due at once made one
// Pass, the books' review once a Default interval, and the clock measured
// once a round when a job needs it. Rounds go by real time, not the clock
// the jobs fire by: they repair the registry's state, which does not wait
// for a fake clock to move.
type Loop struct {
	// Default is the interval of a job that sets none, and of the books'
	// review.
	Default time.Duration
	// Jobs lists the jobs at the start of a round, in the order they are
	// taken.
	Jobs func() []Job
	// Review reviews the books (called on the Loop's goroutine).
	Review func()
	// MeasureClock measures the clock difference with the registry.
	MeasureClock func()
	// RC is the registry the rounds read, together (Pass), each read
	// bounded by Timeout.
	RC      regcenter.Center
	Timeout time.Duration
}

// Run runs rounds until ctx ends, the first at once.
func (l Loop) Run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	due := Due{}
	seen := map[string]*Seen{}
	pruned := time.Now() // the first review comes an interval after start
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		now := time.Now()
		next := time.Minute
		measured := false
		if now.Sub(pruned) >= l.Default {
			pruned = now
			l.Review()
		}
		jobs := l.Jobs()
		var rounds []*Round
		listed := make(map[string]bool, len(jobs))
		for _, j := range jobs {
			listed[j.Name] = true
			every := j.Every
			if every <= 0 {
				every = l.Default
			}
			if j.Clock && !measured {
				l.MeasureClock()
				measured = true
			}
			if due.Take(j.Name, now, every) {
				if seen[j.Name] == nil {
					seen[j.Name] = &Seen{}
				}
				if r := j.Round(seen[j.Name]); r != nil && r.Begin() {
					rounds = append(rounds, r)
				}
			}
			next = min(next, every)
		}
		if len(rounds) > 0 {
			Pass(l.RC, l.Timeout, rounds)
		}
		// A job gone takes what was kept of it: what it read, and when its
		// last round was (added again, it is new: first due an interval on).
		due.Keep(listed)
		maps.DeleteFunc(seen, func(name string, _ *Seen) bool { return !listed[name] })
		timer.Reset(next)
	}
}

// Due is when each job's last round was. A job is first due an interval
// after it is first seen: registration has just done what a round would.
type Due map[string]time.Time

// Take reports whether job name is due at now with interval every, and
// if so notes its round as taken at now. A job seen for the first time
// is noted and not due.
func (d Due) Take(name string, now time.Time, every time.Duration) bool {
	t, ok := d[name]
	if !ok {
		d[name] = now
		return false
	}
	if now.Sub(t) < every {
		return false
	}
	d[name] = now
	return true
}

// Keep forgets the jobs not in listed: a job removed leaves nothing
// behind, and one added again under its name is first due an interval
// after it is seen again, as any new job.
func (d Due) Keep(listed map[string]bool) {
	maps.DeleteFunc(d, func(name string, _ time.Time) bool { return !listed[name] })
}
