package instance

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/placement"
	"github.com/shardjob/shardjob/job/internal/process"
	"github.com/shardjob/shardjob/job/internal/runs"
	"github.com/shardjob/shardjob/regcenter"
)

// Config is what a Node needs of its scheduler, given once at New.
type Config struct {
	// RC is the scheduler's registry.
	RC regcenter.Center
	// Server is this instance's server id, and Me the process holding it.
	Server string
	Me     process.Holder
	// FaultTolerance, AlarmThreshold and HealthURL are published in the
	// node as the options set them.
	FaultTolerance int
	AlarmThreshold int
	HealthURL      string
	// Life is the scheduler's life: the node's own rounds (Check,
	// RetryUnplaced) run under it.
	Life context.Context
	// Timeout bounds each round's registry work (the reshard timeout).
	Timeout time.Duration
	// SessionTimeout is the registry's session timeout, named in the
	// error for a server id held by a live process elsewhere.
	SessionTimeout func() time.Duration
	// InUse is the sentinel that error wraps; ClockSkew the one ClockError
	// wraps.
	InUse     error
	ClockSkew error
	// HostClock is the host's clock that MeasureClock compares with the
	// registry's.
	HostClock func() time.Time
	// Retry runs a registration step, trying it again while the
	// connection is lost (Start's publication).
	Retry func(ctx context.Context, what string, step func() error) error
	// Spawn runs a goroutine of the scheduler's (the kickers' rounds).
	Spawn func(func()) bool
	// Running counts the items running on this instance now.
	Running func() int
	// Handover is called when this instance came on or off the drain
	// list: every job's leader is to reshard now, not at the next fire.
	Handover func()
	// KickLeaders is called when the servers that may take units
	// changed (the drain list, the offline marks).
	KickLeaders func()
	// RetryUnplaced is called when the load table says items are
	// unplaced and an instance came or went: the leaders here are to
	// place them again.
	RetryUnplaced func()
	// Changed is told of each change Check finds, in order, after the
	// node says it.
	Changed func(Change)
	// Log is the scheduler's logger.
	Log *slog.Logger
}

// Node is this instance's node in the namespace and what it knows of its
// place there: the units it holds as the load table last said, its alarm
// and drain state, its load score, and the watches that keep them.
type Node struct {
	cfg Config

	mu       sync.Mutex
	units    int  // units held, as the load table last said
	alarmed  bool // units > threshold, raised
	draining bool
	drained  bool
	watches  []func()
	kick     *runs.Kicker
	// unplacedKick runs unplaced when instances come or go.
	unplacedKick *runs.Kicker
	score        *float64
	free         int
	slots        int
	started      bool // the scheduler's Start returned (Started)

	// staleOwner is the session of a dead earlier process that held our
	// id (Publish proved it).
	staleOwner atomic.Int64
	// clockOffset is local minus registry clock, ns, once clockMeasured.
	clockOffset   atomic.Int64
	clockMeasured atomic.Bool
}

// New returns the Node of cfg's server, not published yet.
func New(cfg Config) *Node { return &Node{cfg: cfg} }

// Start publishes the node and watches the load table, the drain list,
// the offline marks and the instances.
func (n *Node) Start(ctx context.Context) error {
	rc := n.cfg.RC
	err := n.cfg.Retry(ctx, "registering the instance", func() error {
		if err := rc.EnsurePath(ctx, layout.Instances); err != nil {
			return registering(err)
		}
		return n.Publish(ctx)
	})
	if err != nil {
		return err
	}
	kick := runs.NewKicker(n.cfg.Spawn, n.check)
	unplaced := runs.NewKicker(n.cfg.Spawn, n.unplaced)
	poke := func(regcenter.Event) { kick.Kick() }
	n.mu.Lock()
	n.kick, n.unplacedKick = kick, unplaced
	n.watches = []func(){
		rc.Watch(layout.Placement, regcenter.WatchNode, poke),
		rc.Watch(layout.DrainList, regcenter.WatchChildren, func(regcenter.Event) {
			kick.Kick()
			n.cfg.KickLeaders()
		}),
		rc.Watch(layout.Offline, regcenter.WatchChildren, func(regcenter.Event) { n.cfg.KickLeaders() }),
		// An instance came or went: the caps moved, and items unplaced
		// for want of room may fit now.
		rc.Watch(layout.Instances, regcenter.WatchChildren, func(regcenter.Event) { unplaced.Kick() }),
	}
	n.mu.Unlock()
	kick.Kick()
	return nil
}

// Stop cancels the watches Start armed.
func (n *Node) Stop() {
	n.mu.Lock()
	ws := n.watches
	n.watches = nil
	n.mu.Unlock()
	for _, c := range ws {
		c()
	}
}

// SetScore records the load score this instance publishes, with its
// slots and those free.
func (n *Node) SetScore(score float64, slots, free int) {
	n.mu.Lock()
	n.score, n.slots, n.free = &score, slots, free
	n.mu.Unlock()
}

// LastScore returns the score set last, and false before the first.
func (n *Node) LastScore() (float64, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.score == nil {
		return 0, false
	}
	return *n.score, true
}

// Info is what the node publishes.
func (n *Node) Info() placement.Instance {
	n.mu.Lock()
	defer n.mu.Unlock()
	return placement.Instance{
		FaultTolerance: n.cfg.FaultTolerance,
		AlarmThreshold: n.cfg.AlarmThreshold,
		Score:          n.score,
		Slots:          n.slots,
		FreeSlots:      n.free,
		Draining:       n.draining,
		Drained:        n.drained,
		HealthURL:      n.cfg.HealthURL,
		Holder:         placement.Holder(n.cfg.Me),
		Starting:       !n.started,
	}
}

// Started says the scheduler's Start returned, every job registered: the
// node stops saying it is starting (placement.Instance.Starting), within
// ctx. A failed update is logged; the node says it at its next
// publication (a load score, a new session).
func (n *Node) Started(ctx context.Context) {
	n.mu.Lock()
	n.started = true
	n.mu.Unlock()
	if err := n.Publish(ctx); err != nil {
		n.cfg.Log.Warn("saying this instance has started", "err", err)
	}
}

// Status is the instance's place in the namespace as of the last change
// Check saw.
type Status struct {
	// Units is what the instance holds across the namespace.
	Units int
	// Alarmed reports Units above the alarm threshold.
	Alarmed bool
	// Draining reports the instance on the drain list; Drained that it
	// also holds nothing and runs nothing.
	Draining, Drained bool
}

// Status returns the instance's place as of the last change Check saw.
func (n *Node) Status() Status {
	n.mu.Lock()
	defer n.mu.Unlock()
	return Status{Units: n.units, Alarmed: n.alarmed, Draining: n.draining, Drained: n.drained}
}

// ItemsIdle is told when a job runs no items any more: a draining
// instance may now be drained.
func (n *Node) ItemsIdle() {
	n.mu.Lock()
	k := n.kick
	look := n.draining && !n.drained
	n.mu.Unlock()
	if look && k != nil {
		k.Kick()
	}
}

// StaleOwner is the session of a dead earlier process that held this
// server id, found by Publish (0: none). Its status nodes may be taken
// over at once.
func (n *Node) StaleOwner() int64 { return n.staleOwner.Load() }
