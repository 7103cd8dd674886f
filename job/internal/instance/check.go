package instance

import (
	"context"
	"errors"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/placement"
	"github.com/shardjob/shardjob/regcenter"
)

// Kind names a change of the instance's place that Check finds. Each is
// the string of package job's EventKind of the same name.
type Kind string

// The changes Check finds.
const (
	// Alarm: the instance holds more units than its threshold.
	Alarm Kind = "alarm"
	// AlarmCleared: it is back at or under its threshold.
	AlarmCleared Kind = "alarm-cleared"
	// Draining: the instance came on the drain list.
	Draining Kind = "draining"
	// Undrained: it was taken off the drain list.
	Undrained Kind = "undrained"
	// Drained: it is on the drain list, holds no units and runs no items.
	Drained Kind = "drained"
)

// Change is one change Check found: its kind, the units the instance
// holds and, for the alarms, the threshold.
type Change struct {
	Kind      Kind
	Units     int
	Threshold int
}

// AlarmStep is the alarm's state machine: holding more units than
// threshold raises the alarm once, coming back to it or below clears it
// once. It returns the new state and the change to report, if any. A
// threshold of 0 is off.
func AlarmStep(alarmed bool, units, threshold int) (bool, Kind) {
	switch {
	case threshold > 0 && units > threshold && !alarmed:
		return true, Alarm
	case alarmed && (threshold == 0 || units <= threshold):
		return false, AlarmCleared
	}
	return alarmed, ""
}

// check is Check under the node's life, bounded by the timeout (the
// kicker's round).
func (n *Node) check() {
	ctx, cancel := context.WithTimeout(n.cfg.Life, n.cfg.Timeout)
	defer cancel()
	n.Check(ctx)
}

// Check re-reads the load table and the drain list and reports what
// changed: alarms, drain state. A drain state changed is handed over
// (Config.Handover) and published before the changes are told.
func (n *Node) Check(ctx context.Context) {
	rc, log := n.cfg.RC, n.cfg.Log
	units := 0
	if data, _, err := rc.Get(ctx, layout.Placement); err == nil {
		if t, err := placement.DecodeTable(data); err == nil {
			units = t.Units()[n.cfg.Server]
		}
	} else if !errors.Is(err, regcenter.ErrNoNode) {
		log.Warn("reading the load table", "err", err)
		return
	}
	draining, _, err := rc.Exists(ctx, layout.Drain(n.cfg.Server))
	if err != nil {
		log.Warn("reading the drain list", "err", err)
		return
	}
	running := n.cfg.Running()
	m := n.cfg.AlarmThreshold
	n.mu.Lock()
	changes := n.step(units, m, draining, running)
	n.mu.Unlock()
	publish := false
	for _, c := range changes {
		switch c.Kind {
		case Draining, Undrained:
			publish = true
			// Hand the units over (or take them back) now, not at each
			// job's next fire: ask every job's leader for a reshard.
			n.cfg.Handover()
		case Drained:
			publish = true
		}
	}
	if publish {
		if err := n.Publish(ctx); err != nil {
			log.Warn("publishing the drain state", "err", err)
		}
	}
	for _, c := range changes {
		switch c.Kind {
		case Alarm:
			log.Warn("alarm: this instance holds more units than its threshold", "units", c.Units, "threshold", c.Threshold)
		case AlarmCleared:
			log.Info("alarm cleared", "units", c.Units, "threshold", c.Threshold)
		default:
			log.Info("placement: "+string(c.Kind), "units", c.Units)
		}
		n.cfg.Changed(c)
	}
}

// step moves the node's state to what was read (units held, threshold m,
// on the drain list or not, items running) and returns the changes, in
// the order they are told. n.mu is held.
func (n *Node) step(units, m int, draining bool, running int) []Change {
	n.units = units
	var changes []Change
	var kind Kind
	if n.alarmed, kind = AlarmStep(n.alarmed, units, m); kind != "" {
		changes = append(changes, Change{Kind: kind, Units: units, Threshold: m})
	}
	switch {
	case draining && !n.draining:
		n.draining = true
		changes = append(changes, Change{Kind: Draining, Units: units})
	case !draining && n.draining:
		n.draining, n.drained = false, false
		changes = append(changes, Change{Kind: Undrained, Units: units})
	}
	if n.draining && !n.drained && units == 0 && running == 0 {
		n.drained = true
		changes = append(changes, Change{Kind: Drained})
	}
	return changes
}

// unplaced tells the leaders here to place unplaced items again
// (Config.RetryUnplaced), when the load table says there are any: one
// read, however many jobs.
func (n *Node) unplaced() {
	ctx, cancel := context.WithTimeout(n.cfg.Life, n.cfg.Timeout)
	defer cancel()
	data, _, err := n.cfg.RC.Get(ctx, layout.Placement)
	if errors.Is(err, regcenter.ErrNoNode) {
		return // nothing placed yet
	}
	if err != nil {
		n.cfg.Log.Warn("reading the load table for unplaced items", "err", err)
		return
	}
	if t, err := placement.DecodeTable(data); err == nil && t.Unplaced() == 0 {
		return
	}
	n.cfg.RetryUnplaced()
}
