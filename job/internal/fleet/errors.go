package fleet

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Errors is what a scheduler's Shutdown returns when jobs did not stop
// cleanly: every job's error, each wrapped with the job's name (errors.Is
// and errors.As see them all), with a message that says each distinct
// failure once, with the jobs that had it. The zero value holds none.
type Errors struct {
	jobs []string
	errs []error // errs[i] is jobs[i]'s, wrapped with its name
}

// Add records job's err.
func (e *Errors) Add(job string, err error) {
	e.jobs = append(e.jobs, job)
	e.errs = append(e.errs, fmt.Errorf("job %q: %w", job, err))
}

// Err returns e as an error, nil when no job failed.
func (e *Errors) Err() error {
	if len(e.errs) == 0 {
		return nil
	}
	return e
}

// jobsNamed is how many jobs a line of the message names before it
// counts the rest.
const jobsNamed = 5

// Error lists each distinct failure, most frequent first: one job's as
// `job "a": err`, several jobs' as `3 jobs ("a", "b", "c"): err`.
func (e *Errors) Error() string {
	type group struct {
		msg  string
		jobs []string
	}
	var groups []*group
	byMsg := map[string]*group{}
	for i, err := range e.errs {
		msg := strings.TrimPrefix(err.Error(), fmt.Sprintf("job %q: ", e.jobs[i]))
		g := byMsg[msg]
		if g == nil {
			g = &group{msg: msg}
			byMsg[msg] = g
			groups = append(groups, g)
		}
		g.jobs = append(g.jobs, e.jobs[i])
	}
	slices.SortStableFunc(groups, func(a, b *group) int { return len(b.jobs) - len(a.jobs) })
	lines := make([]string, 0, len(groups))
	for _, g := range groups {
		if len(g.jobs) == 1 {
			lines = append(lines, fmt.Sprintf("job %q: %s", g.jobs[0], g.msg))
			continue
		}
		slices.Sort(g.jobs)
		names := make([]string, 0, jobsNamed+1)
		for _, j := range g.jobs[:min(len(g.jobs), jobsNamed)] {
			names = append(names, fmt.Sprintf("%q", j))
		}
		if more := len(g.jobs) - jobsNamed; more > 0 {
			names = append(names, fmt.Sprintf("and %d more", more))
		}
		lines = append(lines, fmt.Sprintf("%d jobs (%s): %s", len(g.jobs), strings.Join(names, ", "), g.msg))
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns every job's error.
func (e *Errors) Unwrap() []error { return e.errs }

// Jobs returns the names of the jobs an Errors in err's tree holds (none
// if err is nil or holds no Errors).
func Jobs(err error) []string {
	var e *Errors
	if !errors.As(err, &e) {
		return nil
	}
	return slices.Clone(e.jobs)
}
