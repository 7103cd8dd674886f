package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/placement"
	"github.com/shardjob/shardjob/job/internal/process"
	"github.com/shardjob/shardjob/job/internal/runs"
	"github.com/shardjob/shardjob/regcenter"
)

// The instance's place in the namespace: its node under
// layout.Instances (fault tolerance, alarm threshold, load score), the
// alarm it raises when it holds too many units, and its drain state.

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

// instance is the scheduler's namespace-level state.
type instance struct {
	mu       sync.Mutex
	units    int  // units held, as the load table last said
	alarmed  bool // units > threshold, raised
	draining bool
	drained  bool
	watches  []func()
	kick     *runs.Kicker
	// unplacedKick runs retryUnplaced when instances come or go.
	unplacedKick *runs.Kicker
	score        *float64
	free         int
	slots        int
}

// startInstance publishes the instance node and watches the load table
// and the drain list.
func (s *Scheduler) startInstance(ctx context.Context) error {
	err := retryRegistration(ctx, s.log, s.startRetryBound(), "registering the instance", func() error {
		if err := s.rc.EnsurePath(ctx, layout.Instances); err != nil {
			return fmt.Errorf("registering the instance: %w", err)
		}
		return s.publishInstance(ctx)
	})
	if err != nil {
		return err
	}
	in := &s.inst
	in.kick = runs.NewKicker(s.spawn, s.checkInstance)
	in.unplacedKick = runs.NewKicker(s.spawn, s.retryUnplaced)
	poke := func(regcenter.Event) { in.kick.Kick() }
	in.mu.Lock()
	in.watches = []func(){
		s.rc.Watch(layout.Placement, regcenter.WatchNode, poke),
		s.rc.Watch(layout.DrainList, regcenter.WatchChildren, func(regcenter.Event) {
			in.kick.Kick()
			s.kickLeaders()
		}),
		s.rc.Watch(layout.Offline, regcenter.WatchChildren, func(regcenter.Event) { s.kickLeaders() }),
		// An instance came or went: the caps moved, and items unplaced
		// for want of room may fit now.
		s.rc.Watch(layout.Instances, regcenter.WatchChildren, func(regcenter.Event) { in.unplacedKick.Kick() }),
	}
	in.mu.Unlock()
	in.kick.Kick()
	return nil
}

func (s *Scheduler) stopInstance() {
	s.inst.mu.Lock()
	ws := s.inst.watches
	s.inst.watches = nil
	s.inst.mu.Unlock()
	for _, c := range ws {
		c()
	}
}

// setScore records the load score this instance publishes, with its
// slots and those free.
func (in *instance) setScore(score float64, slots, free int) {
	in.mu.Lock()
	in.score, in.slots, in.free = &score, slots, free
	in.mu.Unlock()
}

// lastScore returns the score set last, and false before the first.
func (in *instance) lastScore() (float64, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.score == nil {
		return 0, false
	}
	return *in.score, true
}

// kickLeaders flags a reshard of every job this instance leads: the set
// of servers that may take units changed.
func (s *Scheduler) kickLeaders() {
	for _, r := range s.runnersSnapshot() {
		if r.elect.IsLeader() {
			r.kick.membership.Kick()
		}
	}
}

func (s *Scheduler) instanceInfo() placement.Instance {
	s.inst.mu.Lock()
	defer s.inst.mu.Unlock()
	return placement.Instance{
		FaultTolerance: s.opts.faultTolerance,
		AlarmThreshold: s.opts.alarmThreshold,
		Score:          s.inst.score,
		Slots:          s.inst.slots,
		FreeSlots:      s.inst.free,
		Draining:       s.inst.draining,
		Drained:        s.inst.drained,
		HealthURL:      s.opts.healthURL,
		Holder:         placement.Holder(s.me),
	}
}

// publishInstance creates or updates the instance node (ephemeral, of the
// current session). The node is also this process's claim on its server
// id: found held by another session, it is taken over only from an
// earlier life of this process or a dead process of this host
// (job/internal/process); a live process elsewhere makes it fail with
// ErrServerIDInUse.
func (s *Scheduler) publishInstance(ctx context.Context) error {
	data, err := json.Marshal(s.instanceInfo())
	if err != nil {
		return err
	}
	p := layout.Instance(s.opts.serverID)
	sess := s.rc.Session()
	old, st, err := s.rc.Get(ctx, p)
	switch {
	case errors.Is(err, regcenter.ErrNoNode):
		_, err = s.rc.Create(ctx, p, data, regcenter.Ephemeral)
		if errors.Is(err, regcenter.ErrNodeExists) {
			// Another process got there first: look again.
			return s.publishInstance(ctx)
		}
	case err != nil:
		return fmt.Errorf("registering the instance: %w", err)
	case st.EphemeralOwner == sess.ID():
		_, err = s.rc.Set(ctx, p, data, -1)
	default:
		var info placement.Instance
		if st.EphemeralOwner != 0 {
			info, _ = placement.DecodeInstance(old) // garbage says no holder: refused below
			if !process.Holder(info.Holder).EarlierLifeOf(s.me) {
				return idInUse(s.opts.serverID, process.Holder(info.Holder), st.EphemeralOwner, s.sessionTimeout())
			}
			// Ours, from a lost session or a dead process: its status
			// nodes go at once too, rather than a session timeout later.
			if info.Holder.Token != s.me.Token {
				s.log.Info("taking over the server id from an earlier process of this host that is gone", "earlier", process.Holder(info.Holder).String())
			}
			s.staleOwner.Store(st.EphemeralOwner)
		}
		// Left by an earlier session, or a persistent node nobody owns:
		// replace it, over the version read.
		if err := s.rc.Delete(ctx, p, st.Version); err != nil && !errors.Is(err, regcenter.ErrNoNode) && !errors.Is(err, regcenter.ErrBadVersion) {
			return fmt.Errorf("registering the instance: %w", err)
		}
		return s.publishInstance(ctx)
	}
	if err != nil {
		return fmt.Errorf("registering the instance: %w", err)
	}
	return nil
}

// checkInstance re-reads the load table and the drain list and raises
// what changed: alarms, drain state.
func (s *Scheduler) checkInstance() {
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.reshardTimeout)
	defer cancel()
	units := 0
	if data, _, err := s.rc.Get(ctx, layout.Placement); err == nil {
		if t, err := placement.DecodeTable(data); err == nil {
			units = t.Units()[s.opts.serverID]
		}
	} else if !errors.Is(err, regcenter.ErrNoNode) {
		s.log.Warn("reading the load table", "err", err)
		return
	}
	draining, _, err := s.rc.Exists(ctx, layout.Drain(s.opts.serverID))
	if err != nil {
		s.log.Warn("reading the drain list", "err", err)
		return
	}
	running := s.runningItems()
	in := &s.inst
	in.mu.Lock()
	in.units = units
	m := s.opts.alarmThreshold
	var events []Event
	var kind EventKind
	if in.alarmed, kind = alarmStep(in.alarmed, units, m); kind != "" {
		events = append(events, Event{Kind: kind, Units: units, Threshold: m})
	}
	switch {
	case draining && !in.draining:
		in.draining = true
		events = append(events, Event{Kind: EventDraining, Units: units})
	case !draining && in.draining:
		in.draining, in.drained = false, false
		events = append(events, Event{Kind: EventUndrained, Units: units})
	}
	if in.draining && !in.drained && units == 0 && running == 0 {
		in.drained = true
		events = append(events, Event{Kind: EventDrained})
	}
	in.mu.Unlock()
	publish := false
	for _, ev := range events {
		switch ev.Kind {
		case EventDraining, EventUndrained:
			publish = true
			// Hand the units over (or take them back) now, not at each
			// job's next fire: ask every job's leader for a reshard.
			for _, r := range s.runnersSnapshot() {
				r.goFunc(r.askReshard)
			}
		case EventDrained:
			publish = true
		}
	}
	if publish {
		if err := s.publishInstance(ctx); err != nil {
			s.log.Warn("publishing the drain state", "err", err)
		}
	}
	for _, ev := range events {
		switch ev.Kind {
		case EventAlarm:
			s.log.Warn("alarm: this instance holds more units than its threshold", "units", ev.Units, "threshold", ev.Threshold)
		case EventAlarmCleared:
			s.log.Info("alarm cleared", "units", ev.Units, "threshold", ev.Threshold)
		default:
			s.log.Info("placement: "+string(ev.Kind), "units", ev.Units)
		}
		s.emit(ev)
	}
}

// itemsIdle is told when a job runs no items any more: a draining
// instance may now be drained.
func (s *Scheduler) itemsIdle() {
	s.inst.mu.Lock()
	k := s.inst.kick
	look := s.inst.draining && !s.inst.drained
	s.inst.mu.Unlock()
	if look && k != nil {
		k.Kick()
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
	s.inst.mu.Lock()
	defer s.inst.mu.Unlock()
	return PlacementStatus{Units: s.inst.units, Running: running, Alarmed: s.inst.alarmed,
		Draining: s.inst.draining, Drained: s.inst.drained}
}

// unpublishInstance removes the instance node at shutdown, so that the
// caps of the others count one instance fewer at once.
func (s *Scheduler) unpublishInstance(stop context.Context) {
	ctx, cancel := cleanupContext(stop, s.opts.reshardTimeout)
	defer cancel()
	if err := s.rc.Delete(ctx, layout.Instance(s.opts.serverID), -1); err != nil && !errors.Is(err, regcenter.ErrNoNode) && s.rc.Session().Err() == nil {
		s.log.Warn("removing the instance node", "err", err)
	}
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

// alarmStep is the alarm's state machine: holding more
// units than threshold raises the alarm once, coming back to it or below
// clears it once. It returns the new state and the event to raise, if any.
// A threshold of 0 is off.
func alarmStep(alarmed bool, units, threshold int) (bool, EventKind) {
	switch {
	case threshold > 0 && units > threshold && !alarmed:
		return true, EventAlarm
	case alarmed && (threshold == 0 || units <= threshold):
		return false, EventAlarmCleared
	}
	return alarmed, ""
}

// retryUnplaced asks the leaders here to place unplaced items again, when
// the load table says there are any: one read, however many jobs.
func (s *Scheduler) retryUnplaced() {
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.reshardTimeout)
	defer cancel()
	data, _, err := s.rc.Get(ctx, layout.Placement)
	if errors.Is(err, regcenter.ErrNoNode) {
		return // nothing placed yet
	}
	if err != nil {
		s.log.Warn("reading the load table for unplaced items", "err", err)
		return
	}
	if t, err := placement.DecodeTable(data); err == nil && t.Unplaced() == 0 {
		return
	}
	for _, r := range s.runnersSnapshot() {
		if r.elect.IsLeader() {
			r.goFunc(r.retryUnplaced)
		}
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
