package main

import (
	"github.com/shardjob/shardjob/tools/benchkit"

	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// measureLatency runs latJobs one-item jobs every second on three instance
// processes and measures, over latDur: scheduled fire → Execute entered,
// the spread of runs across instances, and the CPU the instances and the
// registry server spend per 1,000 executions. Then it kills the busiest
// instance with SIGKILL and measures the same latency for the fires due in
// the latAfterKill that follow.
func (b *bench) measureLatency(ctx context.Context) error {
	const procs = 3
	spec := instSpec{namespace: "lat", jobs: b.cfg.latJobs, items: 1, cron: "* * * * * *"}
	col := &collector{}
	ins, err := b.startInstances(ctx, procs, spec, col)
	if err != nil {
		return err
	}
	defer b.stopAll(ins)

	// Warm-up: every job has run, then two more seconds for stragglers.
	if err := waitFor(ctx, 40*time.Second, func() bool { return distinctJobs(col.snapshot()) >= b.cfg.latJobs }); err != nil {
		return fmt.Errorf("not every job ran during the warm-up: %w", err)
	}
	if err := benchkit.SleepCtx(ctx, 2*time.Second); err != nil {
		return err
	}

	pids := make([]int, len(ins))
	for i, in := range ins {
		pids[i] = in.PID()
	}
	w0 := time.Now()
	c0, err := cpuSum(pids)
	if err != nil {
		return err
	}
	each0, err := cpuEach(pids)
	if err != nil {
		return err
	}
	z0, zerr := b.reg.CPUTicks()
	if err := benchkit.SleepCtx(ctx, b.cfg.latDur); err != nil {
		return err
	}
	w1 := time.Now()
	c1, err := cpuSum(pids)
	if err != nil {
		return err
	}
	each1, err := cpuEach(pids)
	if err != nil {
		return err
	}
	z1, zerr1 := b.reg.CPUTicks()

	var lat []float64
	perInst := make([]int, procs)
	ranOn := make(map[string]int) // a one-item job → the instance that ran it last
	for _, e := range col.snapshot() {
		if e.entered >= w0.UnixNano() && e.entered < w1.UnixNano() {
			lat = append(lat, e.latencyMS())
			perInst[e.inst]++
			ranOn[e.job] = e.inst
		}
	}
	runs := len(lat)
	spread := spreadOf(perInst)
	k := new(benchkit.KV).Add("jobs", b.cfg.latJobs).Add("procs", procs).Add("window", w1.Sub(w0).Round(time.Millisecond)).
		Add("runs", runs).Add("p50", durMS(benchkit.Percentile(lat, 50))).Add("p99", durMS(benchkit.Percentile(lat, 99))).Add("max", durMS(benchkit.Max(lat))).
		Add("runs_per_instance", benchkit.JoinInts(perInst, "/")).Add("spread_max_min", spread)
	fmt.Println("bench latency" + k.String())
	b.summary.Add("latency_p50", durMS(benchkit.Percentile(lat, 50))).Add("latency_p99", durMS(benchkit.Percentile(lat, 99)))

	k = new(benchkit.KV).Add("runs", runs)
	if runs > 0 {
		instCPU := (c1 - c0) / float64(runs) * 1000
		each := make([]string, len(pids))
		for i := range pids {
			each[i] = benchkit.FmtFloat(each1[i] - each0[i])
		}
		k.Add("instance_cpu_s_per_1000", instCPU).Add("instance_cpu_s", c1-c0).Add("cpu_s_per_instance", strings.Join(each, "/"))
		b.summary.Add("instance_cpu_s_per_1000", instCPU)
		if zerr == nil && zerr1 == nil {
			srvCPU := float64(z1-z0) / benchkit.ClockTicks / float64(runs) * 1000
			k.Add("server_cpu_s_per_1000", srvCPU).Add("server_cpu_s", float64(z1-z0)/benchkit.ClockTicks)
			b.summary.Add("server_cpu_s_per_1000", srvCPU)
		} else {
			k.Add("server_cpu", errorsOr(zerr, zerr1).Error())
		}
	}
	k.Add("cpu_tick_s", 1.0/benchkit.ClockTicks)
	fmt.Println("bench cpu" + k.String())

	// Kill the instance that ran the most.
	vi := argmax(perInst)
	victim := ins[vi]
	tk := time.Now()
	if err := victim.Kill(); err != nil {
		return err
	}
	after := b.cfg.latAfterKill
	// Watch the window, plus a margin for fires due in it that start late:
	// the default session timeout (10s), after which the victim's items
	// move, and two seconds.
	margin := 12 * time.Second
	if err := sleepUntil(ctx, tk.Add(after+margin)); err != nil {
		return err
	}
	lat = lat[:0]
	seen := make(map[string]bool)
	perInst = make([]int, procs)
	// The survivors' own jobs (run elsewhere than on the victim before the
	// kill), and when each of the victim's jobs first ran elsewhere.
	var own []float64
	victimBack := make(map[string]int64)
	for _, e := range col.snapshot() {
		if e.fire >= tk.UnixMilli() && e.fire < tk.Add(after).UnixMilli() {
			lat = append(lat, e.latencyMS())
			seen[fireKey(e.job, e.fire)] = true
			perInst[e.inst]++
			if on, ok := ranOn[e.job]; ok && on != vi {
				own = append(own, e.latencyMS())
			}
		}
		if ranOn[e.job] == vi && e.entered >= tk.UnixNano() {
			if t, ok := victimBack[e.job]; !ok || e.entered < t {
				victimBack[e.job] = e.entered
			}
		}
	}
	var back time.Duration
	for _, t := range victimBack {
		back = max(back, time.Duration(t-tk.UnixNano()))
	}
	victimJobs := 0
	for _, on := range ranOn {
		if on == vi {
			victimJobs++
		}
	}
	due := 0
	for s := tk.Truncate(time.Second).Add(time.Second); s.Before(tk.Add(after)); s = s.Add(time.Second) {
		due += b.cfg.latJobs
	}
	k = new(benchkit.KV).Add("killed", victim.id).Add("window", after).Add("observed_until", after+margin).Add("fires_due", due).Add("fires_run", len(seen)).
		Add("p50", durMS(benchkit.Percentile(lat, 50))).Add("p99", durMS(benchkit.Percentile(lat, 99))).Add("max", durMS(benchkit.Max(lat))).
		Add("runs_per_instance", benchkit.JoinInts(perInst, "/")).
		Add("survivors_own_p50", durMS(benchkit.Percentile(own, 50))).Add("survivors_own_p99", durMS(benchkit.Percentile(own, 99))).Add("survivors_own_max", durMS(benchkit.Max(own))).
		Add("victim_jobs", victimJobs).Add("victim_jobs_back", len(victimBack)).Add("victim_all_back_after", back.Round(time.Millisecond))
	fmt.Println("bench latency_after_kill" + k.String())
	b.summary.Add("survivors_own_p99_after_kill", durMS(benchkit.Percentile(own, 99)))
	if b.cfg.keep {
		return writeExecs(filepath.Join(b.dir, "latency-execs.tsv"), col.snapshot(), tk, ranOn, vi)
	}
	return nil
}

// writeExecs writes every execution the instances reported, one per line,
// for a look at lateness over time: the reporting instance, the job, the
// scheduled fire (unix ms), milliseconds from the kill at tk to the fire,
// the lateness in ms, the run's kind, and "victim" or "own" for whether
// the job ran on the killed instance vi before the kill.
func writeExecs(path string, es []execRec, tk time.Time, ranOn map[string]int, vi int) error {
	var sb strings.Builder
	sb.WriteString("inst\tjob\tfire_ms\tfire_after_kill_ms\tlate_ms\tkind\twhose\n")
	for _, e := range es {
		whose := "own"
		if ranOn[e.job] == vi {
			whose = "victim"
		}
		fmt.Fprintf(&sb, "%d\t%s\t%d\t%d\t%.3f\t%s\t%s\n", e.inst, e.job, e.fire, e.fire-tk.UnixMilli(), e.latencyMS(), e.kind, whose)
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		return fmt.Errorf("write the executions: %w", err)
	}
	fmt.Println("bench latency_execs file=" + path)
	return nil
}

// waitFor polls cond every 50ms until it holds, ctx ends or d passes.
func waitFor(ctx context.Context, d time.Duration, cond func() bool) error {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("still waiting after %v", d)
		}
		if err := benchkit.SleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

func distinctJobs(es []execRec) int {
	m := make(map[string]bool)
	for _, e := range es {
		m[e.job] = true
	}
	return len(m)
}

// spreadOf is the busiest instance's runs over the idlest's ("inf" when
// one ran nothing).
func spreadOf(n []int) string {
	lo, hi := n[0], n[0]
	for _, x := range n {
		lo, hi = min(lo, x), max(hi, x)
	}
	if lo == 0 {
		if hi == 0 {
			return "NaN"
		}
		return "inf"
	}
	return benchkit.FmtFloat(float64(hi) / float64(lo))
}

func argmax(n []int) int {
	best := 0
	for i, x := range n {
		if x > n[best] {
			best = i
		}
	}
	return best
}
