package main

import (
	"github.com/shardjob/shardjob/tools/benchkit"

	"context"
	"fmt"
	"time"
)

// measureThroughput runs one no-op job of tputItems items every second on
// three instance processes and measures, over tputDur, the item executions
// per second and the fires whose items did not all run.
func (b *bench) measureThroughput(ctx context.Context) error {
	const procs = 3
	items := b.cfg.tputItems
	jobs := b.cfg.tputJobs
	spec := instSpec{namespace: "tput", jobs: jobs, items: items, cron: "* * * * * *"}
	col := &collector{}
	ins, err := b.startInstances(ctx, procs, spec, col)
	if err != nil {
		return err
	}
	defer b.stopAll(ins)

	// Warm-up: one complete fire, bounded.
	warm := waitFor(ctx, 40*time.Second, func() bool { return len(completeFires(col.snapshot(), items)) > 0 })
	if ctx.Err() != nil {
		return ctx.Err()
	}
	pids := make([]int, len(ins))
	for i, in := range ins {
		pids[i] = in.PID()
	}
	w0 := time.Now().Truncate(time.Second).Add(1500 * time.Millisecond)
	if err := sleepUntil(ctx, w0); err != nil {
		return err
	}
	c0, err := cpuSum(pids)
	if err != nil {
		return err
	}
	p0, perr0 := b.packetsReceived(ctx)
	w1 := w0.Add(b.cfg.tputDur)
	if err := sleepUntil(ctx, w1); err != nil {
		return err
	}
	c1, err := cpuSum(pids)
	if err != nil {
		return err
	}
	p1, perr1 := b.packetsReceived(ctx)
	// Give the last fires in the window up to five seconds to finish.
	var fires []string
	for s := w0.Truncate(time.Second).Add(time.Second); s.Before(w1); s = s.Add(time.Second) {
		for j := range jobs {
			fires = append(fires, fireKey(fmt.Sprintf("j%d", j), s.UnixMilli()))
		}
	}
	// Bounded: fires still incomplete after it are counted as lost below.
	_ = waitFor(ctx, 5*time.Second, func() bool {
		done := completeFires(col.snapshot(), items)
		for _, f := range fires {
			if !done[f] {
				return false
			}
		}
		return true
	})
	es := col.snapshot()
	runs := 0
	perInst := make([]int, procs)
	for _, e := range es {
		if e.entered >= w0.UnixNano() && e.entered < w1.UnixNano() {
			runs++
			perInst[e.inst]++
		}
	}
	done := completeFires(es, items)
	lost := 0
	for _, f := range fires {
		if !done[f] {
			lost++
		}
	}
	secs := w1.Sub(w0).Seconds()
	k := new(benchkit.KV).Add("jobs", jobs).Add("items", items).Add("procs", procs).Add("window", w1.Sub(w0).Round(time.Millisecond)).
		Add("runs", runs).Add("execs_per_s", float64(runs)/secs).Add("fires", len(fires)).Add("fires_lost", lost).
		Add("runs_per_instance", benchkit.JoinInts(perInst, "/"))
	if runs > 0 {
		k.Add("instance_cpu_s_per_1000", (c1-c0)/float64(runs)*1000)
	}
	if perr0 == nil && perr1 == nil && len(fires) > 0 {
		// Every packet the server received: the three instances'
		// requests, their sessions' pings and the four-letter words.
		k.Add("server_packets_per_fire", float64(p1-p0)/float64(len(fires)))
	}
	durs := fireDurations(es, fires, items)
	k.Add("fire_dur_p50", durMS(benchkit.Percentile(durs, 50))).Add("fire_dur_p99", durMS(benchkit.Percentile(durs, 99))).
		Add("fire_dur_max", durMS(benchkit.Max(durs)))
	if warm != nil {
		k.Add("warmup", "no complete fire in 40s")
	}
	fmt.Println("bench throughput" + k.String())
	b.summary.Add("execs_per_s", float64(runs)/secs).Add("fires_lost", fmt.Sprintf("%d/%d", lost, len(fires)))
	return nil
}

// fireDurations returns, for each of fires whose items all ran at that
// fire (no make-up run standing for any of them), the time from the fire
// to the last of its items' Execute entered, in ms.
func fireDurations(es []execRec, fires []string, items int) []float64 {
	want := make(map[string]bool, len(fires))
	for _, f := range fires {
		want[f] = true
	}
	type agg struct {
		n    int
		last int64
		fire int64
	}
	by := map[string]*agg{}
	for _, e := range es {
		key := fireKey(e.job, e.fire)
		if !want[key] || e.through > e.fire {
			continue
		}
		a := by[key]
		if a == nil {
			a = &agg{fire: e.fire}
			by[key] = a
		}
		a.n++
		a.last = max(a.last, e.entered)
	}
	var durs []float64
	for _, a := range by {
		if a.n >= items {
			durs = append(durs, float64(a.last-a.fire*int64(time.Millisecond))/float64(time.Millisecond))
		}
	}
	return durs
}

// fireKey names one fire of one job.
func fireKey(job string, fire int64) string { return fmt.Sprint(job, "@", fire) }

// completeFires returns the fires (fireKey) for which every item ran,
// whatever the kind of run.
func completeFires(es []execRec, items int) map[string]bool {
	byFire := make(map[string]map[int]bool)
	for _, e := range es {
		// A make-up run stands for every fire of the every-second
		// schedule from its fire through its Through.
		for f := e.fire; f <= max(e.through, e.fire); f += 1000 {
			key := fireKey(e.job, f)
			m := byFire[key]
			if m == nil {
				m = make(map[int]bool)
				byFire[key] = m
			}
			m[e.item] = true
		}
	}
	done := make(map[string]bool)
	for f, m := range byFire {
		if len(m) >= items {
			done[f] = true
		}
	}
	return done
}
