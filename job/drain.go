package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// The operator's placement verbs, for Go programs; the CLI and the HTTP
// handler call these.

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

// Units is what a job holds in the namespace's load table.
type Units struct {
	// PerServer is how many of the job's items each server holds.
	PerServer map[string]int
	// Unplaced is how many of its items no server may take.
	Unplaced int
}

// JobUnits reads what job holds, from its assignment nodes.
func JobUnits(ctx context.Context, rc regcenter.Center, job string) (Units, error) {
	paths := layout.Job(job)
	u := Units{PerServer: map[string]int{}}
	servers, err := rc.Children(ctx, paths.Servers())
	if err != nil && !errors.Is(err, regcenter.ErrNoNode) {
		return Units{}, err
	}
	for _, sv := range servers {
		items, err := readItems(ctx, rc, paths.Flag(sv, layout.Sharding))
		if err != nil {
			return Units{}, err
		}
		if len(items) > 0 {
			u.PerServer[sv] = len(items)
		}
	}
	unplaced, err := readItems(ctx, rc, paths.Unplaced())
	if err != nil {
		return Units{}, err
	}
	u.Unplaced = len(unplaced)
	return u, nil
}

// ReleaseUnits takes a removed job's entry out of the namespace's load
// table, and rebalances when that leaves the instances more than one unit
// apart. It reports whether it rebalanced.
func ReleaseUnits(ctx context.Context, rc regcenter.Center, job string) (bool, error) {
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
		_, err = Rebalance(ctx, rc)
		return err == nil, err
	}
}

// Instance is one instance's entry in the namespace's placement, as its
// node and the table say.
type Instance struct {
	// Server is the instance's id.
	Server string
	// Live reports its node present (its session alive).
	Live bool
	// Units is what it holds across the namespace (the load table).
	Units int
	// FaultTolerance and AlarmThreshold are its settings (1 and 0 when it
	// is not live).
	FaultTolerance, AlarmThreshold int
	// Score is its load score, nil when it publishes none; Slots and
	// FreeSlots its executor slots.
	Score            *float64
	Slots, FreeSlots int
	// Draining: on the drain list. Drained: it reported holding nothing
	// and running nothing while on it. Offline: marked offline by failed
	// health checks.
	Draining, Drained, Offline bool
	// HealthURL is the health endpoint its peers probe.
	HealthURL string
}

// Namespace is the namespace's placement: K, the units unplaced, and
// every instance live or holding units, sorted by id.
type Namespace struct {
	Units, Unplaced int
	Instances       []Instance
}

// ReadNamespace reads the namespace's placement: the load table, every
// instance's node, the drain list and the offline marks. A garbage table
// is an error naming the node.
func ReadNamespace(ctx context.Context, rc regcenter.Center, log *slog.Logger) (Namespace, error) {
	var t loadTable
	data, _, err := rc.Get(ctx, layout.Placement)
	switch {
	case errors.Is(err, regcenter.ErrNoNode):
	case err != nil:
		return Namespace{}, err
	case len(data) > 0:
		if t, err = decodeTable(data); err != nil {
			return Namespace{}, fmt.Errorf("%s: %w", layout.Placement, err)
		}
	}
	view, err := readView(ctx, rc, log)
	if err != nil {
		return Namespace{}, err
	}
	byID := map[string]*Instance{}
	get := func(id string) *Instance {
		if byID[id] == nil {
			byID[id] = &Instance{Server: id, FaultTolerance: DefaultFaultTolerance}
		}
		return byID[id]
	}
	ns := Namespace{Unplaced: t.unplaced(), Units: t.total()}
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
