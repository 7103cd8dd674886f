package job

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/shardjob/shardjob/job/internal/placement"
	"github.com/shardjob/shardjob/job/internal/process"
	"github.com/shardjob/shardjob/job/internal/tracing"
	"github.com/shardjob/shardjob/listener"
)

// Option configures a Scheduler. Options validate their argument and
// NewScheduler returns the first error.
type Option func(*options) error

// options are the Scheduler's settings, each set by its With… option
// (this file and the files of the capabilities they set).
type options struct {
	serverID       string
	process        *process.Holder // the process claiming serverID; nil: this one (tests stand for others)
	logger         *slog.Logger
	reshardTimeout time.Duration
	recordInterval time.Duration
	noJournal      bool // WithCompletionJournal(false)
	// journalOrphanAge and journalSweep: see journal.Journal.Sweep (tests shorten them).
	journalOrphanAge, journalSweep time.Duration
	fireLead                       time.Duration
	now                            func() time.Time // the clock's Now: the fire schedule's time (clock.go)
	clock                          Clock            // the fire schedule's timers; nil: real ones reading now
	hostNow                        func() time.Time // the host clock MaxTimeDiff checks; nil: time.Now
	listeners                      []listener.Listener
	fireListeners                  []listener.FireListener
	faultTolerance                 int
	alarmThreshold                 int
	events                         []func(Event)
	scoreEvery                     time.Duration // load score (health.go); 0: off
	slots                          int
	sampler                        LoadSampler
	healthEvery                    time.Duration
	health                         func(context.Context) error
	healthURL                      string // probe.go
	probeEvery                     time.Duration
	probeClient                    *http.Client
	tracer                         *tracing.Tracer // tracing.go; nil: off

	// alertbook.go: the namespace default of Config.Alert, and the
	// checker's interval (0: DefaultAlertCheck; negative: off).
	alertDefault AlertPolicy
	alertCheck   time.Duration
}

// serverIDPattern is what a server id is (the load table refuses others).
var serverIDPattern = placement.ServerIDPattern

// WithServerID sets the id this process registers under in every job's
// servers node. Default: one id per process, as ElasticJob's instance id:
// the host's first non-loopback IPv4 address (else its name) and the pid,
// "10.0.0.5@-@4242", so several processes on one host need no flag. Set
// one to keep flags such as disabled across restarts; an id that a live
// process holds elsewhere is refused by Start with ErrServerIDInUse,
// naming that process.
func WithServerID(id string) Option {
	return func(o *options) error {
		if !serverIDPattern.MatchString(id) {
			return fmt.Errorf("%w: server id %q must be 1-128 characters from [A-Za-z0-9._:@-]", ErrInvalidOption, id)
		}
		o.serverID = id
		return nil
	}
}

// WithLogger sets the logger. Default slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", ErrInvalidOption)
		}
		o.logger = l
		return nil
	}
}

// WithReshardTimeout bounds how long a fire waits for the leader to
// reshard before it runs with the assignment the registry holds. Default 10s.
func WithReshardTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("%w: reshard timeout %v must be positive", ErrInvalidOption, d)
		}
		o.reshardTimeout = d
		return nil
	}
}

// DefaultFireLead is how long before its time a fire claims its items by
// default (see WithFireLead).
const DefaultFireLead = 500 * time.Millisecond

// maxFireLead bounds WithFireLead: a lead is a head start for a round trip
// or two, not a second schedule.
const maxFireLead = 10 * time.Second

// WithFireLead sets how long before its time a scheduled fire claims its
// items: it proves the assignment and marks the items running (one
// registry transaction, or a reshard when one is due) that much early,
// and the items start at the fire's time itself instead of a round trip
// after it. No execution starts before the fire it stands for. A fire
// claims early only in the steady state — no item of the job running or
// owed on this instance; items still busy with the previous fire are
// waited for — and otherwise at its time, as without a lead. For a job the
// lead is at most half the time to its following fire. Between the claim
// and the fire the items show as running. 0 claims at the fire's time.
// Default DefaultFireLead; at most 10s.
func WithFireLead(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 || d > maxFireLead {
			return fmt.Errorf("%w: fire lead %v must be between 0 and %v", ErrInvalidOption, d, maxFireLead)
		}
		o.fireLead = d
		return nil
	}
}

// WithListener adds a listener told before and after every execution.
func WithListener(l listener.Listener) Option {
	return func(o *options) error {
		if l == nil {
			return fmt.Errorf("%w: nil listener", ErrInvalidOption)
		}
		o.listeners = append(o.listeners, l)
		return nil
	}
}
