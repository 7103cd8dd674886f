package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"github.com/shardjob/shardjob/internal/jobhook"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// The operator's placement verbs: Drain, Undrain and Draining for Go
// programs; rebalance, releaseUnits, readJobUnits and readNamespace for the
// CLI and the HTTP API, through internal/jobhook.

func init() {
	jobhook.ReadNamespace = readNamespace
	jobhook.Rebalance = rebalance
	jobhook.ReleaseUnits = releaseUnits
	jobhook.JobUnits = readJobUnits
}

// ErrUnknownServer is returned for a server id that is not valid.
var ErrUnknownServer = errors.New("job: unknown server")

func checkServerID(server string) error {
	if !serverIDPattern.MatchString(server) {
		return fmt.Errorf("%w: %q is not a server id (1-128 characters from [A-Za-z0-9._:@-])", ErrUnknownServer, server)
	}
	return nil
}

// Drain puts server on the namespace's drain list: it takes no new units,
// lets its running items finish, and hands its units to the others before
// their next fire (every instance's leader duties notice the list change
// and flag a reshard of the jobs they lead). The instance raises
// EventDrained, and its node says so, once it holds nothing and runs
// nothing. Draining a server already on the list is not an error.
func Drain(ctx context.Context, rc regcenter.Center, server string) error {
	if err := checkServerID(server); err != nil {
		return err
	}
	if err := rc.EnsurePath(ctx, layout.DrainList); err != nil {
		return fmt.Errorf("drain %s: %w", server, err)
	}
	if _, err := rc.Create(ctx, layout.Drain(server), nil, regcenter.Persistent); err != nil && !errors.Is(err, regcenter.ErrNodeExists) {
		return fmt.Errorf("drain %s: %w", server, err)
	}
	return nil
}

// Undrain takes server off the drain list: it takes units again (the
// leaders flag reshards as for Drain). Undraining a server not on the list
// is not an error.
func Undrain(ctx context.Context, rc regcenter.Center, server string) error {
	if err := checkServerID(server); err != nil {
		return err
	}
	if err := rc.Delete(ctx, layout.Drain(server), -1); err != nil && !errors.Is(err, regcenter.ErrNoNode) {
		return fmt.Errorf("undrain %s: %w", server, err)
	}
	return nil
}

// Draining lists the servers on the drain list, sorted.
func Draining(ctx context.Context, rc regcenter.Center) ([]string, error) {
	kids, err := rc.Children(ctx, layout.DrainList)
	if errors.Is(err, regcenter.ErrNoNode) {
		return []string{}, nil
	}
	if err != nil {
		return nil, err
	}
	sortStrings(kids)
	return kids, nil
}

// rebalanceOpsPerTxn is how many jobs' flags one transaction sets.
const rebalanceOpsPerTxn = 128

// rebalance flags a reshard of every job in the namespace: each places its
// items again before its next fire, which moves units from the most to the
// least loaded instances until they are within one unit of each other
// (BALANCED jobs; jobs of a named strategy get that strategy's
// assignment). It returns how many jobs were flagged.
func rebalance(ctx context.Context, rc regcenter.Center) (int, error) {
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
			if err := flagReshard(ctx, rc, j); err != nil {
				return flagged, err
			}
			flagged++
		}
	}
	return flagged, nil
}

// flagReshard flags one job's reshard, a job that is gone or already
// flagged counting as done.
func flagReshard(ctx context.Context, rc regcenter.Center, j layout.Job) error {
	err := rc.Multi(ctx, j.FlagReshardOps()...)
	if err == nil || errors.Is(err, regcenter.ErrNodeExists) || errors.Is(err, regcenter.ErrNoNode) {
		return nil
	}
	return fmt.Errorf("flagging a reshard of %s: %w", string(j), err)
}

// readJobUnits reads what job holds, from its assignment nodes.
func readJobUnits(ctx context.Context, rc regcenter.Center, job string) (jobhook.Units, error) {
	paths := layout.Job(job)
	u := jobhook.Units{PerServer: map[string]int{}}
	servers, err := rc.Children(ctx, paths.Servers())
	if err != nil && !errors.Is(err, regcenter.ErrNoNode) {
		return jobhook.Units{}, err
	}
	for _, sv := range servers {
		items, err := readItems(ctx, rc, paths.Flag(sv, layout.Sharding))
		if err != nil {
			return jobhook.Units{}, err
		}
		if len(items) > 0 {
			u.PerServer[sv] = len(items)
		}
	}
	unplaced, err := readItems(ctx, rc, paths.Unplaced())
	if err != nil {
		return jobhook.Units{}, err
	}
	u.Unplaced = len(unplaced)
	return u, nil
}

// releaseUnits takes a removed job's entry out of the namespace's load
// table, and rebalances when that leaves the instances more than one unit
// apart. It reports whether it rebalanced.
func releaseUnits(ctx context.Context, rc regcenter.Center, job string) (bool, error) {
	for attempt := 0; ; attempt++ {
		data, st, err := rc.Get(ctx, layout.Placement)
		if errors.Is(err, regcenter.ErrNoNode) {
			return false, nil // no table: the next reshard builds one
		}
		if err != nil {
			return false, err
		}
		t, err := decodeTable(data)
		if err != nil {
			return false, nil // rebuilt from the assignments by the next reshard
		}
		if _, ok := t.jobs[job]; !ok {
			return false, nil
		}
		t.set(job, jobUnits{})
		_, err = rc.Set(ctx, layout.Placement, t.encode(), st.Version)
		if errors.Is(err, regcenter.ErrBadVersion) && attempt < placeAttempts {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("releasing a removed job's units: %w", err)
		}
		view, err := readView(ctx, rc, slog.Default())
		if err != nil {
			return false, err
		}
		lo, hi := -1, 0
		units := t.units()
		for _, sv := range view.live() {
			n := units[sv]
			if lo < 0 || n < lo {
				lo = n
			}
			hi = max(hi, n)
		}
		if lo < 0 || hi-lo <= 1 {
			return false, nil
		}
		_, err = rebalance(ctx, rc)
		return err == nil, err
	}
}

// readNamespace reads the namespace's placement: the load table, every
// instance's node, the drain list and the offline marks. A garbage table
// is an error naming the node.
func readNamespace(ctx context.Context, rc regcenter.Center, log *slog.Logger) (jobhook.Namespace, error) {
	var t loadTable
	data, _, err := rc.Get(ctx, layout.Placement)
	switch {
	case errors.Is(err, regcenter.ErrNoNode):
	case err != nil:
		return jobhook.Namespace{}, err
	case len(data) > 0:
		if t, err = decodeTable(data); err != nil {
			return jobhook.Namespace{}, fmt.Errorf("%s: %w", layout.Placement, err)
		}
	}
	view, err := readView(ctx, rc, log)
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
	ns := jobhook.Namespace{Unplaced: t.unplaced(), Units: t.total()}
	for id, n := range t.units() {
		get(id).Units = n
	}
	for id, info := range view.instances {
		in := get(id)
		in.Live = true
		in.FaultTolerance, in.AlarmThreshold, in.Score = info.FaultTolerance, info.AlarmThreshold, info.Score
		in.Slots, in.FreeSlots, in.Drained, in.HealthURL = info.Slots, info.FreeSlots, info.Drained, info.HealthURL
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
