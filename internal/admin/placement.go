package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

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
	Offline   bool   `json:"offline"`
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

type instanceNode struct {
	FaultTolerance int      `json:"faultTolerance"`
	AlarmThreshold int      `json:"alarmThreshold,omitempty"`
	Score          *float64 `json:"score,omitempty"`
	Slots          int      `json:"slots,omitempty"`
	FreeSlots      int      `json:"freeSlots,omitempty"`
	Draining       bool     `json:"draining,omitempty"`
	Drained        bool     `json:"drained,omitempty"`
	HealthURL      string   `json:"healthURL,omitempty"`
}

// Placement reads the namespace's placement: the load table, every
// instance's node, the drain list and the items running on each.
func (a *Admin) Placement(ctx context.Context) (Placement, error) {
	var table struct {
		Units    map[string]int `json:"units"`
		Unplaced int            `json:"unplaced"`
	}
	data, _, err := a.rc.Get(ctx, layout.Placement)
	if err != nil && !errors.Is(err, regcenter.ErrNoNode) {
		return Placement{}, err
	}
	if len(data) > 0 {
		if err := json.Unmarshal(data, &table); err != nil {
			return Placement{}, fmt.Errorf("%w: the load table %s is not valid: %v", ErrInvalid, layout.Placement, err)
		}
	}
	byID := map[string]*Instance{}
	get := func(id string) *Instance {
		if byID[id] == nil {
			byID[id] = &Instance{Server: id, FaultTolerance: 1}
		}
		return byID[id]
	}
	out := Placement{Unplaced: table.Unplaced, Units: table.Unplaced}
	for id, n := range table.Units {
		get(id).Units = n
		out.Units += n
	}
	live, err := a.children(ctx, layout.Instances)
	if err != nil {
		return Placement{}, err
	}
	for _, id := range live {
		data, _, err := a.rc.Get(ctx, layout.Instance(id))
		if errors.Is(err, regcenter.ErrNoNode) {
			continue
		}
		if err != nil {
			return Placement{}, err
		}
		in := get(id)
		in.Live = true
		var node instanceNode
		if json.Unmarshal(data, &node) == nil {
			in.FaultTolerance = max(node.FaultTolerance, 1)
			in.AlarmThreshold, in.Score, in.Slots, in.FreeSlots = node.AlarmThreshold, node.Score, node.Slots, node.FreeSlots
			in.Drained, in.HealthURL = node.Drained, node.HealthURL
		}
	}
	draining, err := a.children(ctx, layout.DrainList)
	if err != nil {
		return Placement{}, err
	}
	for _, id := range draining {
		get(id).Draining = true
	}
	offline, err := a.children(ctx, layout.Offline)
	if err != nil {
		return Placement{}, err
	}
	for _, id := range offline {
		get(id).Offline = true
	}
	running, err := a.runningByServer(ctx)
	if err != nil {
		return Placement{}, err
	}
	for id, n := range running {
		get(id).Running = n
	}
	tolerance := map[string]int{}
	for id, in := range byID {
		if in.Live && !in.Draining && !in.Offline {
			tolerance[id] = in.FaultTolerance
		}
		in.Alarmed = in.AlarmThreshold > 0 && in.Units > in.AlarmThreshold
	}
	caps := sharding.Caps(out.Units, tolerance)
	for id, in := range byID {
		in.Cap = caps[id]
		if !in.Draining {
			in.Drained = false
		}
		out.Instances = append(out.Instances, *in)
	}
	slices.SortFunc(out.Instances, func(x, y Instance) int { return strings.Compare(x.Server, y.Server) })
	if out.Instances == nil {
		out.Instances = []Instance{}
	}
	return out, nil
}

// runningByServer counts the items running on each server, over every job.
func (a *Admin) runningByServer(ctx context.Context) (map[string]int, error) {
	names, err := a.jobNames(ctx)
	if err != nil {
		return nil, err
	}
	counts := make([]map[string]int, len(names))
	err = parallel(len(names), 8, func(i int) error {
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

// Rebalance flags a reshard of every job (see job.Rebalance) and returns
// how many.
func (a *Admin) Rebalance(ctx context.Context) (int, error) {
	return job.Rebalance(ctx, a.rc)
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
