package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardjob/shardjob/internal/jobhook"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/sharding"
)

// Instance is one instance's place in the namespace.
type Instance struct {
	Server string `json:"server"`
	// Live reports the instance's node present (its session is alive).
	Live bool `json:"live"`
	// Units is what it holds across the namespace (the load table).
	Units int `json:"units"`
	// Cap is the most units it may hold (1 + K/max(S−n, 1)); 0 when it
	// takes no units.
	Cap            int `json:"cap"`
	FaultTolerance int `json:"faultTolerance"`
	AlarmThreshold int `json:"alarmThreshold,omitempty"`
	// Alarmed reports Units above AlarmThreshold.
	Alarmed bool `json:"alarmed"`
	// Score is its load score (100 idle), when it publishes one.
	Score     *float64 `json:"score,omitempty"`
	FreeSlots int      `json:"freeSlots,omitempty"`
	Slots     int      `json:"slots,omitempty"`
	// Draining: on the drain list. Drained: the instance reported that it
	// holds nothing and runs nothing.
	Draining bool `json:"draining"`
	Drained  bool `json:"drained"`
	// Offline: marked offline by failed health checks (its own or its
	// peers' probes of HealthURL).
	Offline bool `json:"offline"`
	// Starting: its Start is still registering its jobs (the caps of a
	// job it has not registered yet leave it out).
	Starting  bool   `json:"starting,omitempty"`
	HealthURL string `json:"healthURL,omitempty"`
	// Running counts the items running on it now (execution nodes).
	Running int `json:"running"`
}

// Placement is the namespace's placement.
type Placement struct {
	// Units is K, every unit of the namespace; Unplaced those no instance
	// may take.
	Units     int        `json:"units"`
	Unplaced  int        `json:"unplaced"`
	Instances []Instance `json:"instances"`
}

// Placement reads the namespace's placement (jobhook.ReadNamespace), the
// items running on each instance, and each instance's cap.
func (a *Admin) Placement(ctx context.Context) (Placement, error) {
	ns, err := jobhook.ReadNamespace(ctx, a.rc, slog.Default())
	if err != nil {
		if errors.Is(err, job.ErrTableGarbage) {
			return Placement{}, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		return Placement{}, err
	}
	running, err := a.runningByServer(ctx)
	if err != nil {
		return Placement{}, err
	}
	out := Placement{Units: ns.Units, Unplaced: ns.Unplaced, Instances: []Instance{}}
	seen := map[string]bool{}
	tolerance := map[string]int{}
	for _, in := range ns.Instances {
		seen[in.Server] = true
		if in.Live && !in.Draining && !in.Offline {
			tolerance[in.Server] = in.FaultTolerance
		}
	}
	for id := range running {
		if !seen[id] {
			ns.Instances = append(ns.Instances, jobhook.Instance{Server: id, FaultTolerance: job.DefaultFaultTolerance})
		}
	}
	caps := sharding.Caps(out.Units, tolerance)
	for _, in := range ns.Instances {
		out.Instances = append(out.Instances, Instance{
			Server: in.Server, Live: in.Live, Units: in.Units, Cap: caps[in.Server],
			FaultTolerance: in.FaultTolerance, AlarmThreshold: in.AlarmThreshold,
			Alarmed: in.AlarmThreshold > 0 && in.Units > in.AlarmThreshold,
			Score:   in.Score, FreeSlots: in.FreeSlots, Slots: in.Slots,
			Draining: in.Draining, Drained: in.Drained, Offline: in.Offline, Starting: in.Starting, HealthURL: in.HealthURL,
			Running: running[in.Server],
		})
	}
	slices.SortFunc(out.Instances, func(x, y Instance) int { return strings.Compare(x.Server, y.Server) })
	return out, nil
}

// runningByServer counts the items running on each server, over every job.
func (a *Admin) runningByServer(ctx context.Context) (map[string]int, error) {
	names, err := a.jobNames(ctx)
	if err != nil {
		return nil, err
	}
	counts := make([]map[string]int, len(names))
	err = eachErr(len(names), 8, func(i int) error {
		paths := layout.Job(names[i])
		kids, err := a.children(ctx, paths.Execution())
		if err != nil {
			return err
		}
		m := map[string]int{}
		for _, k := range kids {
			n, err := strconv.Atoi(k)
			if err != nil {
				continue
			}
			data, _, err := a.rc.Get(ctx, paths.ItemNode(n, layout.Running))
			if errors.Is(err, regcenter.ErrNoNode) {
				continue
			}
			if err != nil {
				return err
			}
			var mark struct {
				Server string `json:"server"`
			}
			if json.Unmarshal(data, &mark) == nil && mark.Server != "" {
				m[mark.Server]++
			}
		}
		counts[i] = m
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, m := range counts {
		for s, n := range m {
			out[s] += n
		}
	}
	return out, nil
}

// Drain puts server on the drain list (see job.Drain); it reports whether
// the server was not on it already.
func (a *Admin) Drain(ctx context.Context, server string) (bool, error) {
	was, err := a.onDrainList(ctx, server)
	if err != nil {
		return false, err
	}
	if err := job.Drain(ctx, a.rc, server); err != nil {
		return false, translateServer(err)
	}
	return !was, nil
}

// Undrain takes server off the drain list (see job.Undrain); it reports
// whether the server was on it.
func (a *Admin) Undrain(ctx context.Context, server string) (bool, error) {
	was, err := a.onDrainList(ctx, server)
	if err != nil {
		return false, err
	}
	if err := job.Undrain(ctx, a.rc, server); err != nil {
		return false, translateServer(err)
	}
	return was, nil
}

// DrainWarning says what draining server leaves undone, "" when nothing:
// when no other live instance may take units (every other one is gone,
// draining or offline), the units server hands over stay unplaced and do
// not run until an instance joins or the drain is cancelled. Its drain is
// then "safe to stop" for the instance, not for the work.
func (a *Admin) DrainWarning(ctx context.Context, server string) (string, error) {
	p, err := a.Placement(ctx)
	if err != nil {
		return "", err
	}
	units := 0
	for _, in := range p.Instances {
		if in.Server == server {
			units = in.Units
			continue
		}
		if in.Live && !in.Draining && !in.Offline {
			return "", nil
		}
	}
	return fmt.Sprintf("no other instance may take units: %s's %d units (and the %d already unplaced) stay unplaced and do not run until an instance joins or the drain is cancelled (undrain)",
		server, units, p.Unplaced), nil
}

func (a *Admin) onDrainList(ctx context.Context, server string) (bool, error) {
	if err := checkName("server", server); err != nil {
		return false, err
	}
	ok, _, err := a.rc.Exists(ctx, layout.Drain(server))
	return ok, err
}

func translateServer(err error) error {
	if errors.Is(err, job.ErrUnknownServer) {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return err
}

// Rebalance flags a reshard of every job (see jobhook.Rebalance) and returns
// how many.
func (a *Admin) Rebalance(ctx context.Context) (int, error) {
	return jobhook.Rebalance(ctx, a.rc)
}

// ErrNotDrained means a drained instance still held units or ran items
// when the wait ended.
var ErrNotDrained = errors.New("not drained")

// WaitDrained waits up to wait until server is safe to stop: it holds no
// units and runs no items (or its instance is gone).
func (a *Admin) WaitDrained(ctx context.Context, server string, wait time.Duration) (Instance, error) {
	var last Instance
	err := a.waitUntil(ctx, wait, func(ctx context.Context) (bool, []string, error) {
		p, err := a.Placement(ctx)
		if err != nil {
			return false, nil, err
		}
		last = Instance{Server: server}
		for _, in := range p.Instances {
			if in.Server == server {
				last = in
			}
		}
		done := !last.Live || (last.Units == 0 && last.Running == 0)
		return done, []string{layout.Instances, layout.DrainList}, nil
	})
	if errors.Is(err, errTimeUp) {
		return last, fmt.Errorf("%w: %s still holds %d units and runs %d items after %v", ErrNotDrained, server, last.Units, last.Running, wait)
	}
	return last, err
}
