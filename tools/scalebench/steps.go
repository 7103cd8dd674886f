package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/tools/benchkit"
	"github.com/shardjob/shardjob/tools/benchkit/registry"
)

// ms is t in unix milliseconds.
func ms(t time.Time) int64 { return t.UnixMilli() }

// secs is d in seconds.
func secs(d time.Duration) float64 { return d.Seconds() }

// perJob divides n by the jobs.
func (b *bench) perJob(n int64) float64 { return float64(n) / float64(b.cfg.jobs) }

// reqTotal sums a STATS or STARTED line's requests.
func reqTotal(m map[string]int64) int64 { return m["reads"] + m["writes"] + m["multis"] + m["watches"] }

// measureRegister starts every instance at once and waits until every
// one's Start has returned.
func (b *bench) measureRegister(ctx context.Context) error {
	z0, zerr0 := b.reg.CPUTicks()
	b.t0 = time.Now()
	for i := range b.insts {
		in, err := b.startInst(i)
		if err != nil {
			return err
		}
		b.insts[i] = in
	}
	started, err := b.awaitStarted(ctx, b.insts)
	took := time.Since(b.t0)
	z1, zerr1 := b.reg.CPUTicks()
	k := new(benchkit.KV).Add("instances", b.cfg.instances).Add("jobs", b.cfg.jobs)
	if err != nil {
		b.summary.Add("register_s", "failed")
		return fmt.Errorf("after %v: %w", took.Round(time.Second), err)
	}
	var startS, addS []float64
	var req, reads, writes, multis, watches int64
	for _, m := range started {
		startS = append(startS, float64(m["start_ms"])/1000)
		addS = append(addS, float64(m["add_ms"])/1000)
		req += reqTotal(m)
		reads, writes, multis, watches = reads+m["reads"], writes+m["writes"], multis+m["multis"], watches+m["watches"]
	}
	n := float64(b.cfg.instances)
	k.Add("all_started_s", took.Seconds()).Add("start_s_min", slices.Min(startS)).Add("start_s_max", slices.Max(startS)).
		Add("add_s_max", slices.Max(addS)).
		Add("req_per_job_per_inst", b.perJob(req)/n).Add("reads", b.perJob(reads)/n).Add("writes", b.perJob(writes)/n).
		Add("multis", b.perJob(multis)/n).Add("watches", b.perJob(watches)/n).Add("req_per_job_all_insts", b.perJob(req))
	if cpu, err := b.instCPU(); err == nil {
		k.Add("inst_cpu_s", cpu)
	}
	if zerr0 == nil && zerr1 == nil {
		k.Add("server_cpu_s", float64(z1-z0)/benchkit.ClockTicks)
	}
	k.Add("load1", benchkit.LoadAvg())
	fmt.Println("bench register" + k.String())
	b.summary.Add("register_s", took.Seconds()).Add("req_per_job_per_inst", b.perJob(req)/n)
	return nil
}

// awaitStarted waits, up to the registration deadline, for the STARTED
// line of every instance given.
func (b *bench) awaitStarted(ctx context.Context, ins []*inst) ([]map[string]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.regDeadline)
	defer cancel()
	out := make([]map[string]int64, len(ins))
	errs := make([]error, len(ins))
	var wg sync.WaitGroup
	for i, in := range ins {
		wg.Go(func() {
			out[i], errs[i] = in.await(ctx, "STARTED")
			b.log.Info("instance started", "id", in.id, "after", time.Since(in.launched).Round(time.Millisecond), "err", errs[i])
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// instCPU returns the live instances' CPU so far, in seconds.
func (b *bench) instCPU() (float64, error) {
	var sum int64
	for _, in := range b.insts {
		if in == nil || !in.Alive() {
			continue
		}
		t, err := benchkit.CPUTicks(in.PID())
		if err != nil {
			return 0, err
		}
		sum += t
	}
	return float64(sum) / benchkit.ClockTicks, nil
}

// measurePlaced waits until the load table places every item of every
// every-second job and each of those items has run, and says how much of
// the namespace is placed.
func (b *bench) measurePlaced(ctx context.Context) error {
	rc, err := b.observer(ctx)
	if err != nil {
		return err
	}
	defer rc.Close()
	fastNames := map[string]int{}
	fastUnits := 0
	for j, n := range b.fast {
		fastNames[b.jobs[j].Name] = n
		fastUnits += n
	}
	deadline := time.Now().Add(b.cfg.placeDeadline)
	var placedAt, ranAt time.Time
	var t loadTable
	var size int
	for {
		var terr error
		if t, size, terr = readLoadTable(ctx, rc); terr != nil {
			b.log.Warn("reading the load table", "err", terr)
		}
		if placedAt.IsZero() && terr == nil {
			if jobs, _ := t.placedJobs(fastNames); jobs == len(fastNames) {
				placedAt = time.Now()
			}
		}
		if err := b.runs.refresh(); err != nil {
			return err
		}
		if ranAt.IsZero() {
			first := firstRuns(b.runs.all, b.fast, b.t0.UnixNano(), -1)
			if len(first) == fastUnits {
				ranAt = time.Unix(0, slices.Max(slices.Collect(maps.Values(first))))
			}
		}
		if (!placedAt.IsZero() && !ranAt.IsZero()) || time.Now().After(deadline) {
			break
		}
		if err := benchkit.SleepCtx(ctx, 2*time.Second); err != nil {
			return err
		}
	}
	k := new(benchkit.KV)
	ok := true
	if placedAt.IsZero() {
		k.Add("every_second_placed_s", "never")
		ok = false
	} else {
		k.Add("every_second_placed_s", placedAt.Sub(b.t0).Seconds())
	}
	if ranAt.IsZero() {
		k.Add("every_second_all_ran_s", "never")
		ok = false
	} else {
		k.Add("every_second_all_ran_s", ranAt.Sub(b.t0).Seconds())
	}
	jobs, units := t.placedJobs(b.items)
	k.Add("jobs_placed", jobs).Add("of_jobs", b.cfg.jobs).Add("units_placed", units).Add("table_bytes", size).
		Add("table_servers", len(t.Servers))
	fmt.Println("bench placed" + k.String())
	if !ok {
		b.summary.Add("every_second_placed_s", "never")
		return fmt.Errorf("the every-second jobs not all placed and run within %v", b.cfg.placeDeadline)
	}
	b.summary.Add("every_second_placed_s", placedAt.Sub(b.t0).Seconds())
	return nil
}

// observer opens the bench's own center on the namespace, to read it.
func (b *bench) observer(ctx context.Context) (registry.Center, error) {
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return b.reg.Open(octx, b.cfg.namespace, b.log)
}

// measureIdle counts the instances' requests over a quiet window.
func (b *bench) measureIdle(ctx context.Context) error {
	s0, err := b.askAll(ctx, syscall.SIGUSR1, "STATS", time.Minute)
	if err != nil {
		return err
	}
	p0, perr0 := b.reg.ServerRequests(ctx)
	c0, cerr0 := b.instCPU()
	z0, zerr0 := b.reg.CPUTicks()
	t0 := time.Now()
	if err := benchkit.SleepCtx(ctx, b.cfg.idle); err != nil {
		return err
	}
	s1, err := b.askAll(ctx, syscall.SIGUSR1, "STATS", time.Minute)
	if err != nil {
		return err
	}
	w := time.Since(t0)
	p1, perr1 := b.reg.ServerRequests(ctx)
	c1, cerr1 := b.instCPU()
	z1, zerr1 := b.reg.CPUTicks()
	if err := b.runs.refresh(); err != nil {
		return err
	}
	d := map[string]int64{}
	for i := range s0 {
		for _, key := range []string{"reads", "writes", "multis", "watches"} {
			d[key] += s1[i][key] - s0[i][key]
		}
	}
	runs, fires := 0, map[[2]int64]bool{}
	for _, r := range b.runs.all {
		if r.start >= t0.UnixNano() && r.start < t0.Add(w).UnixNano() {
			runs++
			fires[[2]int64{int64(r.job), r.fire}] = true
		}
	}
	k := new(benchkit.KV).Add("window", w.Round(time.Millisecond)).Add("req_per_s", float64(reqTotal(d))/w.Seconds()).
		Add("req_per_s_per_inst", float64(reqTotal(d))/w.Seconds()/float64(b.cfg.instances)).
		Add("reads_per_s", float64(d["reads"])/w.Seconds()).Add("writes_per_s", float64(d["writes"])/w.Seconds()).
		Add("multis_per_s", float64(d["multis"])/w.Seconds()).Add("watches_per_s", float64(d["watches"])/w.Seconds()).
		Add("runs_per_s", float64(runs)/w.Seconds()).Add("job_fires_per_s", float64(len(fires))/w.Seconds())
	if perr0 == nil && perr1 == nil {
		k.Add("server_per_s", float64(p1-p0)/w.Seconds())
	}
	if cerr0 == nil && cerr1 == nil {
		k.Add("inst_cpu_per_s", (c1-c0)/w.Seconds())
	}
	if zerr0 == nil && zerr1 == nil {
		k.Add("server_cpu_per_s", float64(z1-z0)/benchkit.ClockTicks/w.Seconds())
	}
	k.Add("load1", benchkit.LoadAvg())
	fmt.Println("bench idle" + k.String())
	b.summary.Add("idle_req_per_s", float64(reqTotal(d))/w.Seconds())
	b.lastStats = s1
	return nil
}

// measureSize reads each instance's heap and the server's memory, data and
// watches.
func (b *bench) measureSize(ctx context.Context) error {
	heaps, err := b.askAll(ctx, syscall.SIGUSR2, "HEAP", 5*time.Minute)
	if err != nil {
		return err
	}
	var perJob []float64
	for _, h := range heaps {
		perJob = append(perJob, float64(h["heap"]-h["base"])/float64(b.cfg.jobs)/1024)
	}
	k := new(benchkit.KV).Add("heap_kib_per_job_per_inst_mean", mean(perJob)).Add("heap_kib_per_job_per_inst_max", slices.Max(perJob))
	if rss, err := b.reg.RSS(); err == nil {
		k.Add("server_rss_mib", float64(rss)/(1<<20)).Add("server_rss_per_job", b.perJob(rss))
	} else {
		k.Add("server_rss", err.Error())
	}
	if ds, err := b.reg.DataSize(ctx); err == nil {
		k.Add("data_mib", float64(ds.Bytes)/(1<<20)).Add("data_bytes_per_job", b.perJob(ds.Bytes)).
			Add("disk_mib", float64(ds.DiskBytes)/(1<<20)).Add("nodes", ds.Nodes).Add("nodes_per_job", b.perJob(ds.Nodes))
		b.summary.Add("data_bytes_per_job", b.perJob(ds.Bytes))
	} else {
		k.Add("data", err.Error())
	}
	if w, err := b.reg.ServerWatches(ctx); err == nil {
		k.Add("server_watches", w).Add("server_watches_per_job", b.perJob(w))
	} else {
		k.Add("server_watches", err.Error())
	}
	var cw int64
	for _, s := range b.lastStats {
		cw += s["client_watches"]
	}
	k.Add("client_watches_per_job_per_inst", b.perJob(cw)/float64(b.cfg.instances))
	fmt.Println("bench size" + k.String())
	b.summary.Add("heap_kib_per_job_per_inst", mean(perJob))
	return nil
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// measureKill kills one instance with SIGKILL and measures how its items
// come back, and whether a fire was lost.
func (b *bench) measureKill(ctx context.Context) error {
	if err := b.runs.refresh(); err != nil {
		return err
	}
	now := time.Now()
	// The victim: the instance that ran the most every-second items in
	// the last 3 s. Only those count: an hourly job's item the victim
	// happened to run in these 3 s does not run again, anywhere, for an
	// hour, so waiting for it would wait for the schedule, not recovery.
	recent := map[int]map[itemKey]bool{}
	for _, r := range b.runs.all {
		if _, fast := b.fast[r.job]; fast && r.start >= now.Add(-3*time.Second).UnixNano() {
			if recent[r.inst] == nil {
				recent[r.inst] = map[itemKey]bool{}
			}
			recent[r.inst][itemKey{r.job, r.item}] = true
		}
	}
	victim := 0
	for i := range b.insts {
		if len(recent[i]) > len(recent[victim]) {
			victim = i
		}
	}
	held := recent[victim]
	if len(held) == 0 {
		return errors.New("no instance ran anything in the last 3 s")
	}
	tk := time.Now()
	if err := b.insts[victim].Kill(); err != nil {
		return err
	}
	// Every item it ran, run again by a survivor.
	deadline := tk.Add(b.cfg.sessionTimeout + 30*time.Second)
	var recovered time.Time
	for {
		if err := b.runs.refresh(); err != nil {
			return err
		}
		first := firstRuns(b.runs.all, b.fast, tk.UnixNano(), victim)
		var last int64
		missing := 0
		for key := range held {
			t, ok := first[key]
			if !ok {
				missing++
				continue
			}
			last = max(last, t)
		}
		if missing == 0 {
			recovered = time.Unix(0, last)
			break
		}
		if time.Now().After(deadline) {
			break
		}
		if err := benchkit.SleepCtx(ctx, 250*time.Millisecond); err != nil {
			return err
		}
	}
	k := new(benchkit.KV).Add("victim", b.insts[victim].id).Add("victim_items", len(held))
	goal := b.cfg.sessionTimeout + time.Second
	var rec time.Duration
	if recovered.IsZero() {
		k.Add("recovered_s", "never").Add("goal_s", goal.Seconds()).Add("met", false)
		rec = b.cfg.sessionTimeout + 30*time.Second
	} else {
		rec = recovered.Sub(tk)
		k.Add("recovered_s", rec.Seconds()).Add("goal_s", goal.Seconds()).Add("met", rec <= goal)
		b.summary.Add("kill_recovered_s", rec.Seconds())
	}
	after0 := tk.Add(rec + time.Second)
	if err := benchkit.SleepCtx(ctx, time.Until(after0.Add(b.cfg.window+3*time.Second))); err != nil {
		return err
	}
	if err := b.runs.refresh(); err != nil {
		return err
	}
	before := b.latencies(victim, ms(tk.Add(-b.cfg.window)), ms(tk))
	after := b.latencies(victim, ms(after0), ms(after0.Add(b.cfg.window)))
	k.Add("p50_before_ms", benchkit.MS(benchkit.Percentile(before, 50))).Add("p99_before_ms", benchkit.MS(benchkit.Percentile(before, 99))).
		Add("p50_after_ms", benchkit.MS(benchkit.Percentile(after, 50))).Add("p99_after_ms", benchkit.MS(benchkit.Percentile(after, 99))).
		Add("runs_before", len(before)).Add("runs_after", len(after))
	cov := checkCoverage(b.runs.all, b.fast, ms(tk.Add(-b.cfg.window)), ms(time.Now().Add(-3*time.Second)), b.jobName, killMark{inst: victim, at: tk.UnixNano()})
	addCoverage(k, cov)
	fmt.Println("bench kill" + k.String())
	b.summary.Add("kill_lost", cov.lost).Add("p99_before_ms", benchkit.MS(benchkit.Percentile(before, 99))).
		Add("p99_after_ms", benchkit.MS(benchkit.Percentile(after, 99)))

	// The victim comes back, for the rolling restart.
	t := time.Now()
	in, err := b.startInst(victim)
	if err != nil {
		return err
	}
	b.insts[victim] = in
	if _, err := b.awaitStarted(ctx, []*inst{in}); err != nil {
		return err
	}
	fmt.Println("bench kill_restart" + new(benchkit.KV).Add("id", in.id).Add("start_s", time.Since(t).Seconds()).String())
	// A victim's items that never ran elsewhere are a figure (recovered_s
	// never, met false), not the end of the run: the steps after it, the
	// overlap check above all, still run.
	return nil
}

// addCoverage adds what a coverage check found.
func addCoverage(k *benchkit.KV, c coverage) {
	k.Add("fires_checked", c.fires).Add("lost", c.lost).Add("twice", c.twice)
	if c.killed > 0 {
		// Run twice across the kill: the victim's completions in flight.
		k.Add("twice_killed_rerun", c.killed).Add("twice_killed_max_ms_before_kill", c.killedMS).
			Add("twice_unexplained", c.twice-c.killed)
	}
	if len(c.lostExamples) > 0 {
		k.Add("lost_examples", strings.Join(c.lostExamples, ","))
	}
	if len(c.twiceKinds) > 0 {
		var parts []string
		for _, kind := range slices.Sorted(maps.Keys(c.twiceKinds)) {
			parts = append(parts, fmt.Sprintf("%s:%d", kind, c.twiceKinds[kind]))
		}
		k.Add("twice_kinds", strings.Join(parts, ","))
	}
}

// latencies returns the fire latencies (ms) of the plain fires of the
// every-second jobs run by instances other than skip, with fires in
// [from, to) (unix ms).
func (b *bench) latencies(skip int, from, to int64) []float64 {
	var out []float64
	for _, r := range b.runs.all {
		if r.inst == skip || r.kind != "fire" || r.fire < from || r.fire >= to {
			continue
		}
		if _, ok := b.fast[r.job]; ok {
			out = append(out, r.latencyMS())
		}
	}
	return out
}

func (b *bench) jobName(j int) string { return b.jobs[j].Name }

// measureRolling restarts every instance in turn: SIGTERM, a graceful
// shutdown, then a new process with the same id, waiting for its Start.
func (b *bench) measureRolling(ctx context.Context) error {
	tr := time.Now()
	var stops, starts []float64
	for i := range b.insts {
		t := time.Now()
		if err := b.insts[i].Stop(b.cfg.shutdownTimeout + 30*time.Second); err != nil {
			return err
		}
		stops = append(stops, time.Since(t).Seconds())
		t = time.Now()
		in, err := b.startInst(i)
		if err != nil {
			return err
		}
		b.insts[i] = in
		if _, err := b.awaitStarted(ctx, []*inst{in}); err != nil {
			return err
		}
		starts = append(starts, time.Since(t).Seconds())
		b.log.Info("restarted", "id", in.id)
	}
	took := time.Since(tr)
	if err := benchkit.SleepCtx(ctx, b.cfg.settle); err != nil {
		return err
	}
	if err := b.runs.refresh(); err != nil {
		return err
	}
	k := new(benchkit.KV).Add("took_s", took.Seconds()).Add("stop_s_max", slices.Max(stops)).Add("start_s_max", slices.Max(starts)).
		Add("start_s_median", benchkit.Percentile(starts, 50))
	cov := checkCoverage(b.runs.all, b.fast, ms(tr), ms(time.Now().Add(-3*time.Second)), b.jobName, noKill)
	addCoverage(k, cov)
	fmt.Println("bench rolling" + k.String())
	b.summary.Add("rolling_lost", cov.lost)
	if cov.lost > 0 {
		return fmt.Errorf("%d fires lost in the rolling restart", cov.lost)
	}
	return nil
}

// measureOverlaps checks every run logged for two runs of one item at
// once.
func (b *bench) measureOverlaps(context.Context) error {
	if err := b.runs.refresh(); err != nil {
		return err
	}
	ov := findOverlaps(b.runs.all)
	k := new(benchkit.KV).Add("runs", len(b.runs.all)).Add("bad_lines", b.runs.bad).Add("overlaps", len(ov))
	sort.Slice(ov, func(i, j int) bool { return ov[i].b.start < ov[j].b.start })
	for i, o := range ov[:min(len(ov), 3)] {
		k.Add(fmt.Sprintf("overlap%d", i), fmt.Sprintf("%s/%d:i%d[%d..%d]+i%d[%d..%d]", b.jobName(o.key.job), o.key.item,
			o.a.inst, o.a.start, o.a.end, o.b.inst, o.b.start, o.b.end))
	}
	fmt.Println("bench overlaps" + k.String())
	b.summary.Add("overlaps", len(ov))
	if len(ov) > 0 {
		return fmt.Errorf("%d runs of one item at once", len(ov))
	}
	return nil
}
