package configcheck

import (
	"fmt"
	"time"

	"github.com/shardjob/shardjob/internal/docsubset"
)

// After checks one job's dependency fields: after and the parents it
// names (as job/internal/deps reads them), the policy on a parent's
// failure and the wait's bound. The graph is checked with the other jobs
// (deps.Check, with Parent for each edge).
func After(add Add, name, after string, parents []string, unmonitored bool, onParentFailure string, afterTimeout time.Duration) {
	subject := "after " + docsubset.QuoteShort(after)
	if len(parents) > MaxParents {
		add.invalid("after", subject, fmt.Sprintf("names %d jobs; at most %d", len(parents), MaxParents))
	}
	seen := map[string]bool{}
	for _, p := range parents {
		switch {
		case p == "" || !ValidName(p):
			add.invalid("after", subject, fmt.Sprintf("%s is not a job name", docsubset.QuoteShort(p)))
		case p == name:
			add.invalid("after", subject, "names the job itself")
		case seen[p]:
			add.invalid("after", subject, fmt.Sprintf("names %q twice", p))
		}
		seen[p] = true
	}
	if len(parents) > 0 && unmonitored {
		add.invalid("after", subject, "an unmonitored job keeps no records to wait on or be waited on")
	}
	switch onParentFailure {
	case "", ParentSkip, ParentRun, ParentAlert:
		if onParentFailure != "" && len(parents) == 0 {
			add.invalid("onParentFailure", "onParentFailure "+docsubset.QuoteShort(onParentFailure), "needs after")
		}
	default:
		add.invalid("onParentFailure", "onParentFailure "+docsubset.QuoteShort(onParentFailure),
			fmt.Sprintf("must be %q, %q or %q", ParentSkip, ParentRun, ParentAlert))
	}
	if afterTimeout < 0 {
		add.invalid("afterTimeout", fmt.Sprintf("afterTimeout %v", afterTimeout), "must not be negative (0: until the job's next fire)")
	} else if afterTimeout > 0 && len(parents) == 0 {
		add.invalid("afterTimeout", fmt.Sprintf("afterTimeout %v", afterTimeout), "needs after")
	}
}

// A Job is what a dependent's check needs of one of its parents: its
// name, whether it keeps records at once, and its Schedule.
type Job struct {
	Name           string
	Unmonitored    bool
	RecordInterval time.Duration
	Schedule       Schedule
}

// Parent says why parent cannot be a parent of dependent, or "": it
// must keep records (monitored), write them at each completion, and fire
// on the same schedule (jitter aside).
func Parent(dependent, parent Job) string {
	switch {
	case parent.Unmonitored:
		return fmt.Sprintf("job %q is unmonitored: it keeps no records to wait on", parent.Name)
	case parent.RecordInterval > 0:
		return fmt.Sprintf("job %q writes its records behind (recordInterval %v): its dependents would wait for them; set recordInterval 0 on it",
			parent.Name, parent.RecordInterval)
	case !parent.Schedule.SameFires(dependent.Schedule):
		return fmt.Sprintf("job %q fires on other times than this job (%s): a dependent fires with its parents, so give it the same schedule (jitter may differ)",
			parent.Name, parent.Schedule.Difference(dependent.Schedule))
	}
	return ""
}
