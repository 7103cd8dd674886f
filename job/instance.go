package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardjob/shardjob/job/internal/instance"
	"github.com/shardjob/shardjob/job/internal/registration"
	"github.com/shardjob/shardjob/regcenter"
)

// The instance's place in the namespace: the events it raises, the
// options of what its node publishes, and the wiring of that node — its
// publication, its claim on the server id, its alarm and drain state and
// the clock difference are job/internal/instance's — to the jobs here: a
// hand-over when it comes on or off the drain list, the unplaced items
// placed again, the leaders kicked.

// EventKind names what an Event reports.
type EventKind string

// Event kinds.
const (
	// EventAlarm: this instance holds more units than its alarm
	// threshold (Units > Threshold). Raised once per crossing.
	EventAlarm EventKind = "alarm"
	// EventAlarmCleared: the instance is back at or under its threshold.
	EventAlarmCleared EventKind = "alarm-cleared"
	// EventUnplaced: a reshard left Units items of Job unplaced: no
	// server may take them (caps). They are placed when capacity appears.
	EventUnplaced EventKind = "unplaced"
	// EventDraining: this instance is on the drain list.
	EventDraining EventKind = "draining"
	// EventDrained: this instance is on the drain list, holds no units and
	// runs no items: it is safe to stop.
	EventDrained EventKind = "drained"
	// EventUndrained: this instance was taken off the drain list.
	EventUndrained EventKind = "undrained"
	// EventOffline: this instance's health check failed HealthFailures
	// times in a row; it takes no units until a check passes.
	EventOffline EventKind = "offline"
	// EventOnline: a health check passed again after EventOffline.
	EventOnline EventKind = "online"
	// EventPeerOffline: this instance's probe was the HealthFailures-th
	// failure in a row of Peer's health endpoint, and marked Peer offline.
	EventPeerOffline EventKind = "peer-offline"
	// EventPeerOnline: this instance's probe found Peer, marked offline,
	// healthy again, and marked it online.
	EventPeerOnline EventKind = "peer-online"
)

// Job status kinds: a job's state on this instance changed. Job names the
// job; Detail says more where there is more to say.
const (
	// EventRegistered: the job registered here (at Start, and again under
	// each new registry session); Detail is the session.
	EventRegistered EventKind = "registered"
	// EventStopped: the job stopped here; Detail says why (shutdown,
	// removed from the cluster, the shutdown flag).
	EventStopped EventKind = "stopped"
	// EventPaused / EventResumed: this server's paused flag for the job
	// was set / cleared.
	EventPaused  EventKind = "paused"
	EventResumed EventKind = "resumed"
	// EventDisabled / EventEnabled: this server's disabled flag for the
	// job was set / cleared (it takes no items while disabled).
	EventDisabled EventKind = "disabled"
	EventEnabled  EventKind = "enabled"
	// EventConfigChanged: a changed config node was applied; Detail has
	// the cron and the item count now in force.
	EventConfigChanged EventKind = "config-changed"
	// EventConfigRejected: the config node changed to a value that does
	// not decode or validate; the last good config stays in force. Err
	// and Detail say why. Raised once per version of the node.
	EventConfigRejected EventKind = "config-rejected"
	// EventResharded: the items this instance holds changed, seen at the
	// fire where the new assignment took effect; Units is how many it
	// holds now and Detail lists them ("0-2,7").
	EventResharded EventKind = "resharded"
	// EventLeader: this instance became the job's leader.
	EventLeader EventKind = "leader"
	// EventFiresExpired: a make-up run here dropped fires older than the
	// job's StartingDeadline; Units is how many, Detail the items.
	EventFiresExpired EventKind = "fires-expired"
	// EventParentFailed: a run of a dependent job here did not run its job
	// because a parent's fire failed or did not complete in time (Config.
	// After, OnParentFailure skip or alert); Units is how many items,
	// Detail and Err say which parent and fire.
	EventParentFailed EventKind = "parent-failed"
	// EventItemsListed: the leader stored a changed list of item keys
	// (ItemLister); Units is how many keys it has, Detail what changed.
	EventItemsListed EventKind = "items-listed"
	// EventItemsKept: the leader's read of the item source failed, or
	// returned a list it cannot store (an invalid or repeated key, more
	// keys than items, too large): the last list stays in force. Err says
	// why.
	EventItemsKept EventKind = "items-kept"
)

// Event is something about this instance's place in the namespace that a
// program may want to act on (page someone, stop the process once
// drained). See WithEventHandler.
type Event struct {
	Kind EventKind
	// Server is this instance's id.
	Server string
	// Job is the job concerned, for EventUnplaced.
	Job string
	// Units is the count concerned: units held (alarms) or unplaced.
	Units int
	// Threshold is the alarm threshold, for alarm events.
	Threshold int
	// Err is the last health check's error, for EventOffline and
	// EventPeerOffline, and why the config was refused, for
	// EventConfigRejected.
	Err error
	// Peer is the other instance concerned, for the peer events.
	Peer string
	// Detail says more for the job status kinds (see EventRegistered).
	Detail string
	// At is when the instance noticed.
	At time.Time
}

// DefaultFaultTolerance is n of the cap N = 1 + K/max(S−n, 1) when
// WithFaultTolerance is not given.
const DefaultFaultTolerance = 1

// WithFaultTolerance sets this instance's fault tolerance n (at least 1,
// default 1): it holds at most N = 1 + K/max(S−n, 1) units, K being every
// unit of the namespace and S the instances that may take units, so the
// namespace keeps room for every unit while at most n instances are down.
func WithFaultTolerance(n int) Option {
	return func(o *options) error {
		if n < 1 || n > 1<<20 {
			return fmt.Errorf("%w: fault tolerance %d must be at least 1", ErrInvalidOption, n)
		}
		o.faultTolerance = n
		return nil
	}
}

// WithAlarmThreshold sets M: when this instance holds more than m units
// (items of any job) it raises EventAlarm, logs at WARN, and raises
// EventAlarmCleared once it is back at or under m. 0, the default, turns
// the alarm off.
func WithAlarmThreshold(m int) Option {
	return func(o *options) error {
		if m < 0 {
			return fmt.Errorf("%w: alarm threshold %d must not be negative", ErrInvalidOption, m)
		}
		o.alarmThreshold = m
		return nil
	}
}

// WithEventHandler adds a function told of every Event; given more than
// once, each function is told, in the order given (an application's own
// handler, the execution history, the metrics). It is called on the
// scheduler's goroutines and must not block.
func WithEventHandler(fn func(Event)) Option {
	return func(o *options) error {
		if fn == nil {
			return fmt.Errorf("%w: nil event handler", ErrInvalidOption)
		}
		o.events = append(o.events, fn)
		return nil
	}
}

// emit stamps and delivers an event.
func (s *Scheduler) emit(ev Event) {
	ev.Server = s.opts.serverID
	if ev.Kind == EventAlarm {
		s.alarms.Add(1)
	}
	if ev.At.IsZero() {
		ev.At = s.opts.now()
	}
	for _, fn := range s.opts.events {
		fn(ev)
	}
}

// newInstance makes this instance's node (job/internal/instance), given
// what it needs of the scheduler.
func (s *Scheduler) newInstance() *instance.Node {
	return instance.New(instance.Config{
		RC: s.rc, Server: s.opts.serverID, Me: s.me,
		FaultTolerance: s.opts.faultTolerance, AlarmThreshold: s.opts.alarmThreshold, HealthURL: s.opts.healthURL,
		Life: s.ctx, Timeout: s.opts.reshardTimeout, SessionTimeout: s.sessionTimeout,
		InUse: ErrServerIDInUse, ClockSkew: ErrClockSkew, HostClock: s.hostClock,
		Retry: func(ctx context.Context, what string, step func() error) error {
			return registration.Retry(ctx, s.log, s.startRetryBound(), what, step)
		},
		Spawn:   s.spawn,
		Running: s.runningItems,
		Handover: func() {
			for _, r := range s.runnersSnapshot() {
				r.goFunc(r.askReshard)
			}
		},
		KickLeaders: s.kickLeaders,
		RetryUnplaced: func() {
			for _, r := range s.runnersSnapshot() {
				if r.leading() {
					r.goFunc(r.retryUnplaced)
				}
			}
		},
		Changed: func(c instance.Change) {
			s.emit(Event{Kind: EventKind(c.Kind), Units: c.Units, Threshold: c.Threshold})
		},
		Log: s.log,
	})
}

// kickLeaders flags a reshard of every job this instance leads: the set
// of servers that may take units changed.
func (s *Scheduler) kickLeaders() {
	for _, r := range s.runnersSnapshot() {
		if r.leading() {
			r.kick.Kick(kickMembership)
		}
	}
}

// runningItems counts the items running on this instance now.
func (s *Scheduler) runningItems() int {
	n := 0
	for _, r := range s.runnersSnapshot() {
		n += r.book.RunningCount()
	}
	return n
}

// PlacementStatus is this instance's place in the namespace.
type PlacementStatus struct {
	// Units is what the instance holds across the namespace.
	Units int
	// Running is how many items run here now.
	Running int
	// Alarmed reports Units above the alarm threshold.
	Alarmed bool
	// Draining reports the instance on the drain list; Drained that it
	// also holds nothing and runs nothing.
	Draining, Drained bool
}

// Placement reports this instance's place in the namespace, as of the last
// change it saw.
func (s *Scheduler) Placement() PlacementStatus {
	running := s.runningItems()
	st := s.inst.Status()
	return PlacementStatus{Units: st.Units, Running: running, Alarmed: st.Alarmed, Draining: st.Draining, Drained: st.Drained}
}

// unpublishInstance removes the instance node at shutdown, so that the
// caps of the others count one instance fewer at once.
func (s *Scheduler) unpublishInstance(stop context.Context) {
	ctx, cancel := cleanupContext(stop, s.opts.reshardTimeout)
	defer cancel()
	s.inst.Unpublish(ctx)
}

// askReshard joins the job's election (so that someone leads it) and asks
// its leader for a reshard now.
func (r *runner) askReshard() {
	sess := r.rc.Session()
	ctx, cancel := context.WithTimeout(sess.Ctx(), r.s.opts.reshardTimeout)
	defer cancel()
	if err := r.prepare(ctx); err != nil {
		r.log.Warn("joining the election to hand units over", "err", err)
		return
	}
	if err := r.requestReshard(ctx); err != nil {
		r.log.Warn("asking for a reshard", "err", err)
		return
	}
	// Creating the flag notes a reshard for the next fire; writing its
	// data asks the leader to reshard at once.
	if _, err := r.rc.Set(ctx, r.paths.Necessary(), []byte(r.serverID()), -1); err != nil && !errors.Is(err, regcenter.ErrNoNode) {
		r.log.Warn("asking for a reshard", "err", err)
	}
}

// retryUnplaced flags a reshard of a job that has items unplaced.
func (r *runner) retryUnplaced() {
	ctx, cancel := context.WithTimeout(r.rc.Session().Ctx(), r.s.opts.reshardTimeout)
	defer cancel()
	ok, _, err := r.rc.Exists(ctx, r.paths.Unplaced())
	if err != nil {
		r.log.Warn("checking for unplaced items", "err", err)
		return
	}
	if ok {
		r.setNecessary(ctx)
	}
}
