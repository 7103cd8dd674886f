package job

import (
	"context"
	"errors"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shardjob/shardjob/job/internal/configcheck"
)

// Alerts for late fires and for jobs not run (Config.Alert): the policy
// (its checks are job/internal/configcheck's), and what an alert is to its receivers.
// The bookkeeping is package job/internal/alert's; alertbook.go wires it.

// AlertPolicy says when a job's fires are late and when it has gone too
// long without running. Each bound is off at 0.
type AlertPolicy struct {
	// Late, when positive, makes a fire late when an item of it that ran
	// on some instance had not returned Late after the fire's time: the
	// fire is reported once across the cluster (EventFireLate,
	// ErrFireLate), while the item still runs. At least MinInterval.
	Late time.Duration
	// NotRunFor, when positive, reports the job (EventNotRun, ErrNotRun)
	// once it has had no successful run of any item for NotRunFor,
	// counted from its first registration with the policy if it never
	// ran, and again every NotRunFor while that lasts, whether or not an
	// instance of it is alive: the namespace's alert checker notices
	// (WithAlertCheck). It may not be shorter than the longest gap between
	// two of the schedule's fires, since it would then report a job
	// between every two fires.
	NotRunFor time.Duration
}

// IsZero reports whether p sets no bound.
func (p AlertPolicy) IsZero() bool { return p == AlertPolicy{} }

// Alert sentinels, wrapped by Alert.Err and Event.Err of EventFireLate and
// EventNotRun, so that an error handler tells them with errors.Is.
var (
	// ErrFireLate means a fire's items had not all returned within the
	// job's AlertPolicy.Late after the fire's time.
	ErrFireLate = errors.New("job: fire late")
	// ErrNotRun means the job had no successful run for its
	// AlertPolicy.NotRunFor.
	ErrNotRun = errors.New("job: job has not run")
)

// Alert event kinds.
const (
	// EventFireLate: a fire of Job was late (AlertPolicy.Late). Raised on
	// one instance of the cluster, the first to notice; Detail names the
	// fire, Err wraps ErrFireLate.
	EventFireLate EventKind = "fire-late"
	// EventNotRun: Job had no successful run for its AlertPolicy.NotRunFor.
	// Raised by the namespace's alert checker, on one instance, whether or
	// not the job is added there; Err wraps ErrNotRun.
	EventNotRun EventKind = "not-run"
)

// Alert is a late fire or a job that has not run, as told to the job's
// AlertHandler.
type Alert struct {
	// Kind is EventFireLate or EventNotRun.
	Kind EventKind
	// Job is the job concerned.
	Job string
	// Fire is the late fire; for EventNotRun the job's last successful
	// run known to the cluster (zero when it never ran).
	Fire time.Time
	// Bound is the policy's bound that was passed (Late or NotRunFor).
	Bound time.Duration
	// Server is the instance that raised the alert.
	Server string
	// Err wraps ErrFireLate or ErrNotRun and says what happened.
	Err error
	// At is when the alert was raised, on the scheduler's clock.
	At time.Time
}

// AlertHandler is implemented by a Job that wants to be told of its alerts,
// as errhandler.Wrap's jobs are (they pass the alert to their error
// handler). HandleAlert is called on the scheduler's alert goroutine, one
// alert at a time, with a context bounded by the alert's deadline; an
// alert of a job not added on the instance that raises it reaches only
// the events (WithEventHandler) and the history.
type AlertHandler interface {
	HandleAlert(ctx context.Context, a Alert) error
}

// alertProblems checks Alert: each bound 0 or at least MinInterval, and
// NotRunFor no shorter than the longest gap between the next fires of
// base (the parsed cron; nil when it did not parse). See
// configcheck.Alert.
func (c Config) alertProblems(add func(key string, kind error, subject, detail string) *configError, base cron.Schedule, now time.Time) {
	configcheck.Alert(func(key string, _ configcheck.Kind, subject, detail string) {
		add(key, ErrInvalidConfig, subject, detail)
	},
		c.Alert.Late, c.Alert.NotRunFor, base, now)
}
