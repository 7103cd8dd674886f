package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/shardjob/shardjob/job"
)

// errAlerts is check's result when it found a problem: exit code 4.
var errAlerts = errors.New("jobs late or not run")

// cmdCheck is the probe a cron job or a monitoring agent runs: every job
// with an alert policy whose last success is older than its notRunFor, and
// every fire raised late within --window, one line each; exit 4 if any.
func cmdCheck(e *env, _ []string) error {
	problems, err := job.CheckAlerts(e.ctx, e.rc, time.Now(), e.o.window)
	if err != nil {
		return err
	}
	if e.json {
		if err := e.emit(problems); err != nil {
			return err
		}
	} else {
		for _, p := range problems {
			switch p.Kind {
			case job.EventFireLate:
				e.printf("late %s: fire %s had not completed within %v\n", p.Job, p.Fire.UTC().Format(time.RFC3339), p.Bound)
			default:
				last := "never ran"
				if !p.Fire.IsZero() {
					last = "last success " + p.Fire.UTC().Format(time.RFC3339)
				}
				e.printf("not-run %s: no successful run for %v (%s)\n", p.Job, p.Bound, last)
			}
		}
		if len(problems) == 0 {
			e.printf("ok: no job late or not run\n")
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %d problems", errAlerts, len(problems))
	}
	return nil
}
