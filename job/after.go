package job

import (
	"errors"
	"fmt"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/configcheck"
	"github.com/shardjob/shardjob/job/internal/deps"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/schedule"
)

// Dependencies between jobs (Config.After): a dependent job fires on its
// parents' schedule, and each of its runs waits until every parent has
// completed the same fires on every item, across the cluster. The wait
// reads the parents' completion records — what "completed" means
// everywhere else — so a chain inherits the fire path's promises: each
// fire of each job runs once, and a fire that could not wait is owed like
// any other.

// ParentPolicy says what a dependent job's run does when a parent's fire
// failed, or did not complete within Config.AfterTimeout.
type ParentPolicy string

const (
	// ParentSkip, the default, completes the run without calling the job:
	// it is recorded as failed with ErrParentFailed, so that a job after
	// it skips in turn. It is logged and reported as EventParentFailed.
	ParentSkip ParentPolicy = configcheck.ParentSkip
	// ParentRun runs the job anyway; ShardingContext.ParentErr says why
	// the parents did not all succeed.
	ParentRun ParentPolicy = configcheck.ParentRun
	// ParentAlert is ParentSkip logged at error level: for chains where a
	// parent's failure needs a person.
	ParentAlert ParentPolicy = configcheck.ParentAlert
)

// MaxParents bounds the jobs one job may run after.
const MaxParents = configcheck.MaxParents

// ErrParentFailed is what a dependent job's run is recorded with when it
// did not run because a parent's fire failed or did not complete in time
// (ParentSkip, ParentAlert), and ShardingContext.ParentErr's sentinel.
var ErrParentFailed = errors.New("job: a parent job's fire did not succeed")

// parents returns the names in c.After.
func (c Config) parents() []string { return deps.Parents(c.After) }

// dependencyProblems checks the dependencies among cfgs, the jobs of one
// scheduler or one file: every parent is one of them, monitored, and
// fires on the same schedule as its dependent; no job depends on itself
// through others (the cycle is named). The graph is deps.Check's; what a
// parent must be for its dependent is judged here, on their configs.
func dependencyProblems(cfgs []Config, placeOf func(name string) string) []error {
	nodes := make([]deps.Node, len(cfgs))
	for i, c := range cfgs {
		nodes[i] = deps.Node{Name: c.Name, Parents: c.parents()}
	}
	edge := func(dependent, parent int) string {
		return configcheck.Parent(cfgs[dependent].checkJob(), cfgs[parent].checkJob())
	}
	var errs []error
	for _, p := range deps.Check(nodes, edge) {
		c := cfgs[p.Node]
		errs = append(errs, &configError{place: placeOf(c.Name), key: "after", kind: ErrInvalidConfig,
			subject: "after " + quoteShort(c.After), detail: p.Detail})
	}
	return errs
}

// checkDependencies checks the dependencies among the jobs of runners and,
// when not nil, one more about to be added.
func checkDependencies(runners []*runner, more *Config) error {
	cfgs := make([]Config, 0, len(runners)+1)
	for _, r := range runners {
		cfgs = append(cfgs, r.config().Config)
	}
	if more != nil {
		cfgs = append(cfgs, *more)
	}
	return joinConfigErrors(dependencyProblems(cfgs, jobPlace))
}

// dependenciesWith checks the dependencies among the jobs of s with cfg
// in place of the config its job has now: a reload runs the checks Add
// runs.
func (s *Scheduler) dependenciesWith(cfg Config) error {
	var cfgs []Config
	for _, r := range s.runnersSnapshot() {
		if r.name != cfg.Name {
			cfgs = append(cfgs, r.config().Config)
		}
	}
	return joinConfigErrors(dependencyProblems(append(cfgs, cfg), jobPlace))
}

// noteAwaited marks the jobs that a job added here runs after, under s's
// lock: a reload that adds a parent makes it awaited at once.
func (s *Scheduler) noteAwaited() {
	s.jobs.NoteAwaited()
}

// sameSchedule reports whether a and b have the same fires before
// jitter (configcheck.Schedule.SameFires).
func sameSchedule(a, b Config) bool { return a.checkJob().Schedule.SameFires(b.checkJob().Schedule) }

// checkJob is what configcheck.Parent reads of c.
func (c Config) checkJob() configcheck.Job {
	return configcheck.Job{Name: c.Name, Unmonitored: c.Unmonitored, RecordInterval: c.RecordInterval,
		Schedule: configcheck.Schedule{Cron: c.Cron, TimeZone: c.TimeZone, Calendar: calendarOf(c)}}
}

// awaitParents waits until every parent of f's job has completed, on every
// item, every fire f's runs stand for (from the earliest of its items'
// fires through the latest), or until the job's AfterTimeout (by default
// its next fire) or the session ends. It returns nil when they all
// succeeded, else an error wrapping ErrParentFailed that says which
// parent, item and fire, or that the wait timed out.
func (r *runner) awaitParents(f *fire) error {
	parents := f.Job.Parents
	if len(parents) == 0 || len(f.Items) == 0 {
		return nil
	}
	first := fireplan.Earliest(f.Fires, f.At, f.Items)
	last := r.book.LatestThrough(f.At, f.Items...)
	sched := f.Job.Sched
	if err := f.Job.SchedErr; err != nil {
		return err
	}
	wait := deps.Bound(f.Job.AfterTimeout, sched, last, r.s.opts.now())
	parent := func(name string) (deps.Parent, error) {
		pr := r.s.runner(name)
		if pr == nil {
			return deps.Parent{}, fmt.Errorf("parent %q is not added on this scheduler", name)
		}
		pcfg := pr.config()
		psched, _, err := pcfg.Schedule()
		if err != nil {
			return deps.Parent{}, fmt.Errorf("parent %q: %w", name, err)
		}
		return deps.Parent{Paths: pr.paths, Items: pcfg.ShardingTotalCount, Schedule: psched}, nil
	}
	// Each parent's fires are its own jittered times of the same nominal
	// fires.
	err := deps.Await(r.runContext(f.Sess), r.rc, r.log, deps.Wait{Parents: parents, Parent: parent,
		First: schedule.NominalFire(sched, first), Last: schedule.NominalFire(sched, last), Fire: first, Timeout: wait})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrParentFailed, err)
	}
	return nil
}

// skipForParents completes f's items without running them, each as a
// run failed with err (ParentSkip, ParentAlert).
func (r *runner) skipForParents(f *fire, results chan itemResult, n int, err error) {
	msg := "skipping the run: a parent's fire did not succeed"
	if ParentPolicy(f.Job.OnParentFailure) == ParentAlert {
		r.log.Error(msg, "items", layout.FormatItems(f.Items), "fire", f.At, "err", err)
	} else {
		r.log.Warn(msg, "items", layout.FormatItems(f.Items), "fire", f.At, "err", err)
	}
	r.s.emit(Event{Kind: EventParentFailed, Job: r.name, Units: len(f.Items), Detail: err.Error(), Err: err, At: time.Now()})
	now := time.Now()
	for _, it := range f.Items {
		through := r.book.LatestThrough(f.FireOf(it), it)
		results <- itemResult{Item: it, Fire: f.FireOf(it), Through: through, Kind: f.Kind, Begin: now, End: now, Err: err}
	}
	r.done.All(f.Sess, f.Job.Done, results, n)
}
