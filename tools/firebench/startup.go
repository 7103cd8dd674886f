package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/shardjob/shardjob/tools/benchkit"
)

// reshardLate is the warning an instance logs when a fire waited for a
// reshard longer than its bound: what a start-up storm of reshards looks
// like in the logs.
const reshardLate = "resharding did not finish in time"

// measureStartup starts three instance processes at once, each with
// startJobs one-item jobs every second in a namespace of their own, and
// measures how their fires keep time from the first fire after each
// instance's Start returned: the lateness (fire time → Execute entered)
// of every run over startWindow from that instance's Start (and of those
// after every Start returned, and in each instance's first 10 s), the fires due
// in the window after the last Start that never ran, the make-up runs
// (a fire skipped and run later), and the instances' warnings that a
// reshard did not finish in time. It measures once per count of
// startHogs: that many goroutines of this process spin beside the
// instances from before they start until the window ends (a CPU hog on
// the same cores).
func (b *bench) measureStartup(ctx context.Context) error {
	for _, hogs := range b.cfg.startHogs {
		if err := b.startupWith(ctx, hogs); err != nil {
			return fmt.Errorf("hogs %d: %w", hogs, err)
		}
	}
	return nil
}

func (b *bench) startupWith(ctx context.Context, hogs int) error {
	const procs = 3
	spec := instSpec{namespace: fmt.Sprintf("start%d", hogs), jobs: b.cfg.startJobs, items: 1, cron: "* * * * * *"}

	hctx, stopHogs := context.WithCancel(ctx)
	var hogWG sync.WaitGroup
	for range hogs {
		hogWG.Go(func() { spin(hctx) })
	}
	defer func() {
		stopHogs()
		hogWG.Wait()
	}()

	col := &collector{}
	t0 := time.Now()
	ins, err := b.startInstances(ctx, procs, spec, col)
	if err != nil {
		return err
	}
	defer b.stopAll(ins)
	var lastReady time.Time
	startS := make([]float64, len(ins))
	for i, in := range ins {
		startS[i] = in.readyAt.Sub(t0).Seconds()
		if in.readyAt.After(lastReady) {
			lastReady = in.readyAt
		}
	}
	end := lastReady.Add(b.cfg.startWindow)
	// The runs of the window's last fires are entered within a second.
	if err := benchkit.SleepCtx(ctx, time.Until(end)+time.Second); err != nil {
		return err
	}
	stopHogs()

	// Per instance, its runs of fires after its own Start returned; and
	// every (job, fire) pair due from the first whole second after the
	// last Start to the window's end, run or not.
	var lat, firstTen, afterAll []float64
	ran := map[string]map[int64]int{} // the runs that stood for each (job, fire)
	madeUp := 0
	// The runs of fires after every Start later than lateMS, and how many
	// of those were make-up runs (a fire passed, then made up) rather than
	// fires that waited (for their job's reshard, as a rule).
	const lateMS = 100
	lateAfter, lateMadeUp := 0, 0
	for _, e := range col.snapshot() {
		if ran[e.job] == nil {
			ran[e.job] = map[int64]int{}
		}
		for f := e.fire; f <= e.through; f += 1000 {
			ran[e.job][f]++
		}
		in := ins[e.inst]
		fire := time.UnixMilli(e.fire)
		if !fire.After(in.readyAt) || fire.After(in.readyAt.Add(b.cfg.startWindow)) {
			continue
		}
		lat = append(lat, e.latencyMS())
		madeUpRun := e.through > e.fire || e.kind != "fire"
		if fire.After(lastReady) {
			afterAll = append(afterAll, e.latencyMS())
			if e.latencyMS() > lateMS {
				lateAfter++
				if madeUpRun {
					lateMadeUp++
				}
			}
		}
		if fire.Before(in.readyAt.Add(10 * time.Second)) {
			firstTen = append(firstTen, e.latencyMS())
		}
		if madeUpRun {
			madeUp++
		}
	}
	due, lost, twice := 0, 0, 0
	var lostFires []string // the first few, to look for in the instances' logs
	for s := lastReady.Truncate(time.Second).Add(time.Second); !s.After(end); s = s.Add(time.Second) {
		for j := range b.cfg.startJobs {
			due++
			name := fmt.Sprintf("j%d", j)
			if ran[name][s.UnixMilli()] > 1 {
				twice++
			}
			if ran[name][s.UnixMilli()] == 0 {
				lost++
				if len(lostFires) < 10 {
					lostFires = append(lostFires, name+"@"+s.UTC().Format("15:04:05"))
				}
			}
		}
	}
	if lost > 0 {
		fmt.Fprintf(os.Stderr, "startup: %d fires never ran, the first: %s\n", lost, strings.Join(lostFires, " "))
	}
	late := 0
	for _, in := range ins {
		n, err := countLines(filepath.Join(b.dir, in.id+".log"), reshardLate)
		if err != nil {
			return err
		}
		late += n
	}
	k := new(benchkit.KV).Add("hogs", hogs).Add("jobs", b.cfg.startJobs).Add("procs", procs).
		Add("start_s", joinSeconds(startS)).Add("window", b.cfg.startWindow).Add("runs", len(lat)).
		Add("p50", durMS(benchkit.Percentile(lat, 50))).Add("p99", durMS(benchkit.Percentile(lat, 99))).Add("max", durMS(benchkit.Max(lat))).
		Add("first10s_p99", durMS(benchkit.Percentile(firstTen, 99))).Add("first10s_max", durMS(benchkit.Max(firstTen))).
		Add("after_every_start_p99", durMS(benchkit.Percentile(afterAll, 99))).
		Add("due_after_last_start", due).Add("never_ran", lost).Add("ran_twice", twice).Add("made_up_runs", madeUp).
		Add("after_every_start_over_100ms", lateAfter).Add("of_them_made_up", lateMadeUp).Add("reshard_late_warnings", late)
	fmt.Println("bench startup" + k.String())
	b.summary.Add(fmt.Sprintf("startup_hogs%d_p99", hogs), durMS(benchkit.Percentile(lat, 99))).
		Add(fmt.Sprintf("startup_hogs%d_never_ran", hogs), lost)
	return nil
}

// joinSeconds joins seconds as 1.23/4.56/….
func joinSeconds(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = benchkit.FmtFloat(x)
	}
	return strings.Join(parts, "/")
}

// spin keeps a core busy until ctx ends.
func spin(ctx context.Context) {
	x := uint64(1)
	for ctx.Err() == nil {
		for range 1 << 16 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	_ = x
}

// countLines counts the lines of the file at path that contain s.
func countLines(path, s string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			n++
		}
	}
	return n, sc.Err()
}
