package job

import (
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shardjob/shardjob/job/internal/configcheck"
)

// A schedule that ends: a config whose end has passed, or whose limit is
// used up, is valid for ever (Validate does not look at the clock) but has
// no fire left. Scheduler.Add refuses it, as an endpoint creating jobs
// should (CheckEnded); a running job whose schedule ends — its last fire
// dispatched, or a reload to such a config — says so once in its log and
// stays registered, and the status shows "ended".

// CheckEnded returns nil when c's schedule has a fire after now (or may
// have one: a next fire beyond ScheduleHorizonYears is not an end), and
// otherwise an error wrapping ErrInvalidConfig and ErrScheduleEnded that
// names the field which ended it: end, limit or pausedUntil. Validate
// cannot say this (a config it accepts stays valid for ever); whoever takes
// a job to run from now on — Scheduler.Add, an endpoint creating jobs —
// calls CheckEnded with its clock.
func (c Config) CheckEnded(now time.Time) error {
	cs, err := c.calendarSchedule()
	if err != nil {
		return err
	}
	end, ended := configcheck.Ended(cs, c.Cron, calendarOf(c), now)
	if !ended {
		return nil
	}
	return &configError{place: jobPlace(c.Name), kind: ErrScheduleEnded, key: end.Key, subject: end.Subject, detail: end.Detail,
		hint: "the job would never fire: change the field or remove the job"}
}

// firesUntilEnded is the trigger's fire function for cfg's schedule: the
// runner's, which also says once, after the last fire of a schedule that
// can end (an end or a limit), that the job will not fire again.
func (r *runner) firesUntilEnded(cfg *spec, sched cron.Schedule) func(time.Time) {
	if cfg.End.IsZero() && cfg.Limit <= 0 {
		return r.goFire
	}
	return func(at time.Time) {
		r.goFire(at)
		if sched.Next(at).IsZero() {
			r.noteEnded(cfg)
		}
	}
}

// noteEnded logs, once per config, that cfg's schedule has ended: the job
// stays registered (a config change may give it fires again) but nothing
// fires until then.
func (r *runner) noteEnded(cfg *spec) {
	if r.endedNoted.Swap(cfg) == cfg {
		return
	}
	why := "no further fires"
	if err := cfg.CheckEnded(r.s.opts.now()); err != nil {
		why = err.Error()
	}
	r.log.Warn("schedule ended: no further fires; the job stays registered until its config changes or it is removed", "reason", why)
}
