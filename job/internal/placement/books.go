package placement

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

// The books: the load table kept true to the assignment nodes. A reshard
// replaces its job's entry (placer.go); a missing or garbage table is
// rebuilt (rebuild.go); what follows takes out the entries of jobs that
// are gone and repairs those that credit servers that are not live.

// ReviewBooks is each scheduler's namespace-wide pass over the load
// table, once per reconcile round: it takes out the entries of jobs whose
// nodes are gone (deleted by hand, not with `shardjob remove`, which takes
// its job's entry out itself), and repairs the entries that credit units
// to a server that is not live. Those are repaired right after the change
// by whoever made it (job's repairBooks); this pass is for a change whose
// repair was lost (a process that died between the two) in a job nobody
// leads any more. In the steady state it costs three reads. A stale
// entry's repair is read by repair (reshard.RepairRequest) and committed
// through p.
func ReviewBooks(ctx context.Context, rc regcenter.Center, p *Placer, repair func(context.Context, regcenter.Center, string) (*Request, error)) error {
	data, st, err := rc.Get(ctx, layout.Placement)
	if errors.Is(err, regcenter.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	t, err := DecodeTable(data)
	if err != nil {
		return nil // rebuilt from the assignments by the next reshard
	}
	names, err := namespaceJobs(ctx, rc)
	if err != nil {
		return err
	}
	exists := make(map[string]bool, len(names))
	for _, n := range names {
		exists[n] = true
	}
	live := map[string]bool{}
	kids, err := rc.Children(ctx, layout.Instances)
	if err != nil && !errors.Is(err, regcenter.ErrNoNode) {
		return err
	}
	for _, k := range kids {
		live[k] = true
	}
	gone, stale := 0, []string{}
	for _, j := range slices.Sorted(maps.Keys(t.jobs)) {
		if !exists[j] {
			t.set(j, jobUnits{})
			gone++
			continue
		}
		for sv := range t.jobs[j].servers {
			if !live[sv] {
				stale = append(stale, j)
				break
			}
		}
	}
	if gone > 0 {
		if _, err := rc.Set(ctx, layout.Placement, t.encode(), st.Version); err != nil {
			return err
		}
	}
	var errs []error
	for _, j := range stale {
		req, err := repair(ctx, rc, j)
		if err == nil {
			err = p.Place(ctx, req)
		}
		if err != nil && !errors.Is(err, regcenter.ErrNoNode) {
			errs = append(errs, fmt.Errorf("job %q: %w", j, err))
		}
	}
	return errors.Join(errs...)
}

// JobUnits reads what job holds, from its assignment nodes.
func JobUnits(ctx context.Context, rc regcenter.Center, job string) (jobhook.Units, error) {
	paths := layout.Job(job)
	u := jobhook.Units{PerServer: map[string]int{}}
	servers, err := rc.Children(ctx, paths.Servers())
	if err != nil && !errors.Is(err, regcenter.ErrNoNode) {
		return jobhook.Units{}, err
	}
	ps := make([]string, 0, len(servers)+1)
	for _, sv := range servers {
		ps = append(ps, paths.Flag(sv, layout.Sharding))
	}
	nodes, err := rc.GetMany(ctx, append(ps, paths.Unplaced())...)
	if err != nil {
		return jobhook.Units{}, err
	}
	for i, sv := range servers {
		if items, _ := ItemsOf(nodes[i]); len(items) > 0 {
			u.PerServer[sv] = len(items)
		}
	}
	unplaced, _ := ItemsOf(nodes[len(servers)])
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
		t, err := DecodeTable(data)
		if err != nil {
			return false, nil // rebuilt from the assignments by the next reshard
		}
		if _, ok := t.jobs[job]; !ok {
			return false, nil
		}
		t.set(job, jobUnits{})
		_, err = rc.Set(ctx, layout.Placement, t.encode(), st.Version)
		if errors.Is(err, regcenter.ErrBadVersion) && attempt < Attempts {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("releasing a removed job's units: %w", err)
		}
		view, err := ReadView(ctx, rc, slog.Default())
		if err != nil {
			return false, err
		}
		lo, hi := -1, 0
		units := t.Units()
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
