package placement

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/shardjob/shardjob/internal/jobhook"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// The namespace as the operators see it and act on it: its placement
// (ReadNamespace, for the CLI and the HTTP API through internal/jobhook)
// and the rebalance that flags every job's reshard.

// DefaultFaultTolerance is the tolerance an instance is shown with when
// its node says none: job.DefaultFaultTolerance, which package job's
// tests check.
const DefaultFaultTolerance = 1

// ReadNamespace reads the namespace's placement: the load table, every
// instance's node, the drain list and the offline marks. A garbage table
// is an error naming the node.
func ReadNamespace(ctx context.Context, rc regcenter.Center, log *slog.Logger) (jobhook.Namespace, error) {
	var t Table
	data, _, err := rc.Get(ctx, layout.Placement)
	switch {
	case errors.Is(err, regcenter.ErrNoNode):
	case err != nil:
		return jobhook.Namespace{}, err
	case len(data) > 0:
		if t, err = DecodeTable(data); err != nil {
			return jobhook.Namespace{}, fmt.Errorf("%s: %w", layout.Placement, err)
		}
	}
	view, err := ReadView(ctx, rc, log)
	if err != nil {
		return jobhook.Namespace{}, err
	}
	byID := map[string]*jobhook.Instance{}
	get := func(id string) *jobhook.Instance {
		if byID[id] == nil {
			byID[id] = &jobhook.Instance{Server: id, FaultTolerance: DefaultFaultTolerance}
		}
		return byID[id]
	}
	ns := jobhook.Namespace{Unplaced: t.Unplaced(), Units: t.total()}
	for id, n := range t.Units() {
		get(id).Units = n
	}
	for id, info := range view.Instances {
		in := get(id)
		in.Live = true
		in.FaultTolerance, in.AlarmThreshold, in.Score = info.FaultTolerance, info.AlarmThreshold, info.Score
		in.Slots, in.FreeSlots, in.Drained, in.HealthURL = info.Slots, info.FreeSlots, info.Drained, info.HealthURL
		in.Starting = info.Starting
	}
	for id := range view.excluded.draining {
		get(id).Draining = true
	}
	for id := range view.excluded.offline {
		get(id).Offline = true
	}
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		in := byID[id]
		in.Drained = in.Drained && in.Draining
		ns.Instances = append(ns.Instances, *in)
	}
	return ns, nil
}

// namespaceJobs lists the namespace's jobs: the root's children that are
// not the namespace's own nodes.
func namespaceJobs(ctx context.Context, rc regcenter.Center) ([]string, error) {
	names, err := rc.Children(ctx, "/")
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(names, func(n string) bool { return strings.HasPrefix(n, ".") }), nil
}

// rebalanceOpsPerTxn is how many jobs' flags one transaction sets.
const rebalanceOpsPerTxn = 128

// Rebalance flags a reshard of every job in the namespace: each places its
// items again before its next fire, which moves units from the most to the
// least loaded instances until they are within one unit of each other
// (BALANCED jobs; jobs of a named strategy get that strategy's
// assignment). It returns how many jobs were flagged.
func Rebalance(ctx context.Context, rc regcenter.Center) (int, error) {
	names, err := namespaceJobs(ctx, rc)
	if err != nil {
		return 0, fmt.Errorf("rebalance: %w", err)
	}
	jobs := make([]layout.Job, len(names))
	for i, n := range names {
		jobs[i] = layout.Job(n)
	}
	flagged := 0
	for len(jobs) > 0 {
		chunk := jobs[:min(len(jobs), rebalanceOpsPerTxn)]
		jobs = jobs[len(chunk):]
		var ops []regcenter.Op
		for _, j := range chunk {
			ops = append(ops, j.FlagReshardOps()...)
		}
		if err := rc.Multi(ctx, ops...); err == nil {
			flagged += len(chunk)
			continue
		}
		// One of them is flagged already, or gone: one by one.
		for _, j := range chunk {
			if err := FlagReshard(ctx, rc, j); err != nil {
				return flagged, err
			}
			flagged++
		}
	}
	return flagged, nil
}

// FlagReshard flags one job's reshard, a job that is gone or already
// flagged counting as done.
func FlagReshard(ctx context.Context, rc regcenter.Center, j layout.Job) error {
	err := rc.Multi(ctx, j.FlagReshardOps()...)
	if err == nil || errors.Is(err, regcenter.ErrNodeExists) || errors.Is(err, regcenter.ErrNoNode) {
		return nil
	}
	return fmt.Errorf("flagging a reshard of %s: %w", string(j), err)
}
