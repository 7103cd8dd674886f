package job

import (
	"errors"
	"fmt"

	"github.com/shardjob/shardjob/job/internal/configcheck"
	"github.com/shardjob/shardjob/job/internal/deps"
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

// parentOf is the parent job name's facts as a dependent run's wait reads
// them (deps.Wait.Parent).
func (r *runner) parentOf(name string) (deps.Parent, error) {
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
