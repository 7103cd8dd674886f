// Command dispatchbench measures the dispatcher: dispatches per second with a
// handler that finishes at once, and start latency, on SQLite and on
// PostgreSQL (a throwaway server from internal/testing/pgtest, shared by several
// dispatcher nodes in this process, each with its own connection pool).
// It prints one "bench NAME key=value ..." line per measurement.
//
//	go run ./tools/dispatchbench -store postgres -nodes 3 -duration 60s
//
// With -backlog it measures instead the claim's rate and plan beside
// backlogs of waiting tasks (backlog.go):
//
//	go run ./tools/dispatchbench -backlog 0,10000,100000,1000000
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/dispatch"
	"github.com/shardjob/shardjob/internal/testing/pgtest"
	_ "github.com/shardjob/shardjob/store/postgres"
	_ "github.com/shardjob/shardjob/store/sqlite"
)

func main() {
	store := flag.String("store", "postgres", "sqlite or postgres")
	nodes := flag.Int("nodes", 3, "dispatcher nodes (postgres; sqlite always runs one)")
	duration := flag.Duration("duration", 10*time.Second, "how long each throughput run lasts")
	rate := flag.Int("rate", 1000, "tasks per second fed for the latency run")
	batch := flag.Int("batch", 0, "claim batch size (0: the dispatcher's default)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile to this file")
	only := flag.String("run", "throughput,saturated,latency", "the runs to make, comma-separated")
	backlog := flag.String("backlog", "", "instead of the runs: the claim's rate beside these numbers of waiting tasks, comma-separated (postgres)")
	work := flag.Int("backlog-work", 100000, "-backlog: the tasks each run starts, ahead of the backlog")
	backlogCaps := flag.String("backlog-caps", "open", "-backlog: open (1,000 per tenant, 3,000 global) or capped (5, 10, 20; 30)")
	backlogAt := flag.String("backlog-at", "due", "-backlog: the backlog is due (behind the work in EDF order) or later (due in an hour)")
	release := flag.Int("backlog-release", 0, "-backlog: the work falls due at this many tasks a second (0: all due at the start); needs -backlog-at later")
	analyze := flag.Bool("backlog-analyze", true, "-backlog: VACUUM ANALYZE the backlog before the run (false: VACUUM only, autovacuum off: no statistics)")
	plans := flag.String("plans", "", "-backlog: write each run's median claim plan to this directory")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if *batch == 0 {
		*batch = 1000
	}
	if *backlog != "" {
		sizes, err := parseSizes(*backlog)
		if err == nil {
			err = runBacklog(context.Background(), backlogParams{sizes: sizes, work: *work, caps: *backlogCaps, at: *backlogAt,
				nodes: *nodes, batch: *batch, plansDir: *plans, release: *release, analyze: *analyze})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			pprof.StopCPUProfile()
			os.Exit(1)
		}
		return
	}
	runs := map[string]bool{}
	for _, r := range strings.Split(*only, ",") {
		runs[strings.TrimSpace(r)] = true
	}
	if err := run(*store, *nodes, *duration, *rate, *batch, runs); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(store string, nodes int, duration time.Duration, rate, batch int, runs map[string]bool) error {
	ctx := context.Background()
	var newDSN func() (string, error)
	switch store {
	case "sqlite":
		dir, err := os.MkdirTemp("", "dispatch-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		n := 0
		newDSN = func() (string, error) { n++; return filepath.Join(dir, fmt.Sprintf("b%d.db", n)), nil }
		nodes = 1
	case "postgres":
		sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		srv, err := pgtest.Start(sctx)
		cancel()
		if err != nil {
			return err
		}
		defer srv.Close()
		newDSN = func() (string, error) { return srv.NewDatabase(ctx) }
	default:
		return fmt.Errorf("unknown store %q", store)
	}
	// Throughput: caps wide open, tasks all startable, zero-work handler.
	// Tasks are assigned before the clock starts, enough for this many
	// dispatches a second; a run that uses them all up says exhausted=true.
	open, saturated := 14000, 5000
	if store == "sqlite" {
		open, saturated = 12000, 5000
	}
	if runs["throughput"] {
		if err := throughput(ctx, store, nodes, newDSN, duration, batch, "throughput", map[string]int{"t1": 1000, "t2": 1000, "t3": 1000}, 3000, open); err != nil {
			return err
		}
	}
	// Saturated: small caps, so every start waits for a freed slot.
	if runs["saturated"] {
		if err := throughput(ctx, store, nodes, newDSN, duration, batch, "saturated", map[string]int{"t1": 5, "t2": 10, "t3": 20}, 30, saturated); err != nil {
			return err
		}
	}
	if runs["latency"] {
		return latency(ctx, store, nodes, newDSN, duration, rate, batch)
	}
	return nil
}

type node struct {
	d *dispatch.Dispatcher
}

func startNodes(ctx context.Context, store, dsn string, n, batch int, onStart func(*dispatch.Dispatcher) dispatch.StartFunc, finishOnReturn bool) ([]*dispatch.Dispatcher, error) {
	var out []*dispatch.Dispatcher
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for i := range n {
		var self *dispatch.Dispatcher
		var ready sync.WaitGroup
		ready.Add(1)
		var h dispatch.StartFunc
		cfg := dispatch.Config{Driver: store, DSN: dsn, NodeID: fmt.Sprintf("bench%d", i), BatchSize: batch, Logger: quiet, FinishOnReturn: finishOnReturn,
			OnStart: func(ctx context.Context, t dispatch.Task) error { ready.Wait(); return h(ctx, t) }}
		d, err := dispatch.Open(ctx, cfg)
		if err != nil {
			return nil, err
		}
		self = d
		h = onStart(self)
		ready.Done()
		out = append(out, d)
	}
	return out, nil
}

func closeAll(ds []*dispatch.Dispatcher) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	for _, d := range ds {
		errs = append(errs, d.Close(ctx))
	}
	return errors.Join(errs...)
}

func assignMany(ctx context.Context, d *dispatch.Dispatcher, worker string, n int, start time.Time, prefix string) error {
	for off := 0; off < n; off += 5000 {
		k := min(5000, n-off)
		ts := make([]dispatch.NewTask, k)
		for i := range ts {
			ts[i] = dispatch.NewTask{ExternalID: fmt.Sprintf("%s-%d", prefix, off+i)}
		}
		if _, err := d.Assign(ctx, dispatch.Assignment{Worker: worker, Start: start, End: start.Add(time.Hour), Tasks: ts, Timeout: time.Hour}); err != nil {
			return err
		}
	}
	return nil
}

// throughput runs tasks for duration with every task startable and
// reports dispatches per second, and the latency from the moment a slot
// could take the task (its expected start, or the last finish of its
// worker if later) to its start listener.
func throughput(ctx context.Context, store string, nodes int, newDSN func() (string, error), duration time.Duration, batch int, name string, caps map[string]int, global, rate int) error {
	dsn, err := newDSN()
	if err != nil {
		return err
	}
	var started atomic.Int64
	var lastFree sync.Map // worker -> time.Time of its last finish
	var mu sync.Mutex
	var lat []time.Duration
	var stop atomic.Bool
	ds, err := startNodes(ctx, store, dsn, nodes, batch, func(d *dispatch.Dispatcher) dispatch.StartFunc {
		return func(ctx context.Context, t dispatch.Task) error {
			now := time.Now()
			ready := t.ExpectedStart
			if v, ok := lastFree.Load(t.Worker); ok && v.(time.Time).After(ready) {
				ready = v.(time.Time)
			}
			if !stop.Load() {
				started.Add(1)
				mu.Lock()
				lat = append(lat, now.Sub(ready))
				mu.Unlock()
			}
			err := d.FinishAttempt(ctx, t.UUID, t.Attempt)
			lastFree.Store(t.Worker, time.Now())
			return err
		}
	}, false)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := closeAll(ds); cerr != nil {
			fmt.Fprintln(os.Stderr, "bench: close:", cerr)
		}
	}()
	d0 := ds[0]
	if err := d0.SetGlobalMax(ctx, global); err != nil {
		return err
	}
	per := int(duration.Seconds()*float64(rate))/len(caps) + 1000
	start := time.Now().Add(-time.Second)
	for w, c := range caps {
		if err := d0.PutWorker(ctx, dispatch.Worker{Name: w, MaxRunning: c}); err != nil {
			return err
		}
		if err := assignMany(ctx, d0, w, per, start, name+w); err != nil {
			return err
		}
	}
	for _, w := range []string{"t1", "t2", "t3"} {
		lastFree.Store(w, time.Now())
	}
	t0 := time.Now()
	for _, d := range ds {
		if err := d.Start(ctx); err != nil {
			return err
		}
	}
	timer := time.NewTimer(duration)
	<-timer.C
	stop.Store(true)
	n := started.Load()
	el := time.Since(t0)
	mu.Lock()
	p50, p99 := pct(lat, 50), pct(lat, 99)
	mu.Unlock()
	fmt.Printf("bench %s store=%s nodes=%d batch=%d caps=%v global=%d seconds=%.1f dispatches=%d per_sec=%.0f start_p50_ms=%.2f start_p99_ms=%.2f exhausted=%t\n",
		name, store, len(ds), batch, caps, global, el.Seconds(), n, float64(n)/el.Seconds(), ms(p50), ms(p99), n >= int64(per*len(caps)))
	return nil
}

// latency feeds tasks at a steady rate, each due 20 ms after it is
// assigned, with caps wide open, and reports expected start → start
// listener.
func latency(ctx context.Context, store string, nodes int, newDSN func() (string, error), duration time.Duration, rate, batch int) error {
	dsn, err := newDSN()
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var lat []time.Duration
	ds, err := startNodes(ctx, store, dsn, nodes, batch, func(d *dispatch.Dispatcher) dispatch.StartFunc {
		return func(ctx context.Context, t dispatch.Task) error {
			l := time.Since(t.ExpectedStart)
			mu.Lock()
			lat = append(lat, l)
			mu.Unlock()
			return d.FinishAttempt(ctx, t.UUID, t.Attempt)
		}
	}, false)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := closeAll(ds); cerr != nil {
			fmt.Fprintln(os.Stderr, "bench: close:", cerr)
		}
	}()
	d0 := ds[0]
	if err := d0.SetGlobalMax(ctx, 10000); err != nil {
		return err
	}
	if err := d0.PutWorker(ctx, dispatch.Worker{Name: "t", MaxRunning: 10000}); err != nil {
		return err
	}
	for _, d := range ds {
		if err := d.Start(ctx); err != nil {
			return err
		}
	}
	// Every 10 ms, a batch of rate/100 tasks due 20 ms later.
	per := max(rate/100, 1)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	end := time.Now().Add(duration)
	sent := 0
	for i := 0; time.Now().Before(end); i++ {
		<-tick.C
		due := time.Now().Add(20 * time.Millisecond)
		ts := make([]dispatch.NewTask, per)
		for j := range ts {
			ts[j] = dispatch.NewTask{ExternalID: fmt.Sprintf("l-%d-%d", i, j)}
		}
		if _, err := d0.Assign(ctx, dispatch.Assignment{Worker: "t", Start: due, End: due.Add(time.Minute), Tasks: ts, Timeout: time.Hour}); err != nil {
			return err
		}
		sent += per
	}
	wait := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(lat)
		mu.Unlock()
		if n >= sent || time.Now().After(wait) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	fmt.Printf("bench latency store=%s nodes=%d rate_per_sec=%d seconds=%.0f tasks=%d started=%d start_p50_ms=%.2f start_p99_ms=%.2f\n",
		store, len(ds), rate, duration.Seconds(), sent, len(lat), ms(pct(lat, 50)), ms(pct(lat, 99)))
	return nil
}

func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
