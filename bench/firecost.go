package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/shardjob/shardjob/tools/benchkit"
)

// The fire-cost benchmark: what a scheduler itself spends per run. One
// node process per system and job count, its J jobs firing every second
// with a job that returns at once, no run recorded (node -count-only):
// the process measures its own CPU time and allocations over a window
// after its start, and the benchmark reads the coordination server's CPU
// time over the same window. The peers benchmark charges every system
// with its recording of each run and spreads a run's cost over three
// processes; this one leaves only the scheduler's work per run.

// fireCostResult is one system's figures with J jobs.
type fireCostResult struct {
	system, settings string
	jobs             int
	cost             nodeCost
	serverCPUS       float64
}

func (b *bench) measureFireCost(ctx context.Context) error {
	if err := b.warmUp(ctx, b.cfg.fcSystems); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	return b.eachRun(ctx, "firecost", b.cfg.fcJobs, b.cfg.fcSystems, func(sys string, j int) error {
		r, err := b.fireCostRun(ctx, sys, j)
		if err != nil {
			return err
		}
		r.print()
		b.summary.Add(fmt.Sprintf("%s_j%d_cpu_us_per_run", sys, j), r.nodeUSPerRun())
		return nil
	})
}

func (b *bench) fireCostRun(ctx context.Context, system string, jobs int) (*fireCostResult, error) {
	dir, args, serverPIDs, err := b.systemRun(ctx, "firecost", system, jobs)
	if err != nil {
		return nil, err
	}
	args = append(args, "-work", "0s", "-count-only", "-measure-after", b.cfg.fcWarmup.String(), "-measure-for", b.cfg.fcDuration.String())
	res := &fireCostResult{system: system, jobs: jobs, settings: describeSystem(system, b.cfg)}
	n, err := b.startNode(dir, 0, "n0", args)
	if err != nil {
		return nil, err
	}
	defer b.stopNodes([]*node{n})
	var started int64
	if err := waitFor(ctx, 90*time.Second, 50*time.Millisecond, func() (bool, error) {
		r, err := readRecords(n)
		if !n.proc.Alive() {
			return false, fmt.Errorf("n0 exited: %v (see %s)", n.proc.Err(), filepath.Join(dir, "n0.log"))
		}
		started = r.started
		return started != 0, err
	}); err != nil {
		return nil, fmt.Errorf("node not started: %w", err)
	}
	from := time.Unix(0, started).Add(b.cfg.fcWarmup)
	if err := sleepUntil(ctx, from); err != nil {
		return nil, err
	}
	cpu0, err := cpuOf(serverPIDs...)
	if err != nil {
		return nil, err
	}
	if err := sleepUntil(ctx, from.Add(b.cfg.fcDuration)); err != nil {
		return nil, err
	}
	cpu1, err := cpuOf(serverPIDs...)
	if err != nil {
		return nil, err
	}
	_, res.serverCPUS = phaseCPU(cpu0, cpu1, 0)
	if err := waitFor(ctx, 30*time.Second, 100*time.Millisecond, func() (bool, error) {
		r, err := readRecords(n)
		if r.cost != nil {
			res.cost = *r.cost
		}
		return r.cost != nil, err
	}); err != nil {
		return nil, fmt.Errorf("no measure from the node: %w", err)
	}
	if res.cost.runs == 0 {
		return nil, fmt.Errorf("no run in the measured window (see %s)", filepath.Join(dir, "n0.log"))
	}
	return res, nil
}

func (r *fireCostResult) nodeUSPerRun() float64 {
	return float64(r.cost.cpuNS) / 1e3 / float64(r.cost.runs)
}

func (r *fireCostResult) print() {
	runs := float64(r.cost.runs)
	fmt.Println("bench firecost" + new(benchkit.KV).Add("system", r.system).Add("jobs", r.jobs).
		Add("settings", r.settings).Add("runs", r.cost.runs).
		Add("node_cpu_us_per_run", r.nodeUSPerRun()).
		Add("server_cpu_us_per_run", r.serverCPUS*1e6/runs).
		Add("allocs_per_run", float64(r.cost.mallocs)/runs).
		Add("bytes_per_run", float64(r.cost.allocs)/runs).
		Add("requests_per_run", float64(r.cost.requests)/runs).
		Add("write_ops_per_run", float64(r.cost.writeOps)/runs).String())
}
