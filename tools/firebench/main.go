// Command firebench measures shardjob's fire path as a user sees it: through
// the public API only (job, regcenter, regcenter/zktest, regcenter/etcdtest),
// against a real registry server that it starts itself, with multi-instance
// figures taken from separate instance processes (tools/firebench/instance)
// so that each process's CPU and latency are its own.
//
// Usage (from the module's checkout; ZooKeeper as for the tests):
//
//	go run ./tools/firebench -all          # every measurement, modest defaults (a few minutes)
//	go run ./tools/firebench -requests     # registry requests per fire, 1/1,000/10,000 items
//	go run ./tools/firebench -latency      # fire latency and CPU per 1,000 runs, 3 processes, then kill -9 one
//	go run ./tools/firebench -kill         # kill -9 → the victim's items started elsewhere
//	go run ./tools/firebench -throughput   # item executions per second, 3 processes
//	go run ./tools/firebench -register     # 10,000 idle jobs: start time, requests, watches, heap, idle traffic
//	go run ./tools/firebench -ranges       # a SCOPE range job of a million records: calls and requests per fire
//	go run ./tools/firebench -startup      # 3 processes started at once: fires on time from the first after Start, alone and beside a CPU hog
//	go run ./tools/firebench -h            # every flag
//
// -registry picks the servers every measurement runs on, in turn (a
// comma-separated list; with more than one, a last Markdown table puts
// their summaries side by side: make bench runs
// "-all -registry embedded,zookeeper,etcd,postgres"): embedded (the
// embedded default of regcenter/embedded, its member hosted by this
// program started again as a process of its own, the instances reaching it
// by its Dir as a user's processes do), postgres (one
// PostgreSQL server from internal/testing/pgtest, synchronous commits on,
// its processes' CPU counted together, its requests as the transactions
// pg_stat_database counts), zookeeper (the
// default: one standalone ZooKeeper) or etcd (one etcd member from
// regcenter/etcdtest, in a process of its own as ZooKeeper's JVM is, so
// that its CPU is measured apart and its heap is not the bench's). Every
// center, in the bench and in the instance processes, is opened with
// regcenter.Open, and requests are counted the same way on both, by
// regcenter.Stats: one count per round trip. On ZooKeeper that is one
// request (a get, a multi, ...). On etcd it is one gRPC call: a range or a
// read-only txn counts as a read; a write is one txn whose compares are
// its ops' own preconditions (Writes, or Multis for a Multi), read-only
// txns (Reads) coming first only when such a txn's compares fail and the
// keys that name the failing op did not fit in its else branch, or for
// the writes that the server cannot check alone (sequential creates, two
// ops on one node or on children of one parent); a watch's arming read
// (WatchNow) counts as a watch, and so does each opening of the
// namespace's one watch stream, which serves every watch. The lease's
// keepalives (every fifth of the TTL) are the session's upkeep, as
// ZooKeeper's pings are, and not requests.
// The server's own counts are ZooKeeper's zk_packets_received and wchs, or
// etcd's grpc_server_msg_received_total and
// etcd_debugging_mvcc_watcher_total from its /metrics.
//
// Each figure is printed as a line "bench NAME key=value ...", and a last
// line "summary key=value ..." repeats the headline figures. Durations end
// in "ms". Every measurement is bounded in time: one that cannot finish
// (say, a fire of 10,000 items that never completes) reports what it saw
// and the bench goes on. The machine's other load shows in every figure;
// run it on a quiet machine and compare medians of several runs.
package main

import (
	"github.com/shardjob/shardjob/tools/benchkit"
	"github.com/shardjob/shardjob/tools/benchkit/registry"
	"runtime"

	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// config holds the flags.
type config struct {
	all, requests, latency, kill, throughput, register, ranges, startup bool

	reqItems     []int
	reqFires     int
	reqBigFires  int
	reqDeadline  time.Duration
	latJobs      int
	latDur       time.Duration
	latAfterKill time.Duration
	killItems    int
	killTimeouts []time.Duration
	tputItems    int
	tputJobs     int
	tputDur      time.Duration
	regJobs      int
	regIdle      time.Duration
	regDeadline  time.Duration
	regProfile   string
	stopProfile  string
	heapProfile  string
	regSettle    time.Duration
	startJobs    int
	startHogs    []int
	startWindow  time.Duration

	registries  []string // -registry: each measurement runs on each, in turn
	instanceBin string
	keep        bool
	instProfile bool
	// instLateTrace, when set, has each instance write an execution trace
	// of the seconds before its first run this late (-late-trace).
	instLateTrace time.Duration
	// instLateTraceFrom is how long after READY that trace is armed.
	instLateTraceFrom time.Duration
	instVerbose       bool
	verbose           bool
	trace             bool
}

// bench is one run of the program: its registry server, work directory
// and results.
type bench struct {
	cfg         config
	log         *slog.Logger
	reg         *registry.Registry
	dir         string
	instanceBin string
	summary     benchkit.KV
}

func main() { benchkit.Main("firebench", parseFlags, run) }

func parseFlags(args []string) (config, error) {
	var c config
	var reqItems, killTimeouts, registries, startHogs string
	fs := flag.NewFlagSet("firebench", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: go run ./tools/firebench [-all | -requests -latency -kill -throughput -register -ranges -startup] [flags]")
		fs.PrintDefaults()
	}
	fs.BoolVar(&c.all, "all", false, "run every measurement")
	fs.BoolVar(&c.requests, "requests", false, "measure registry requests per fire and fire duration (one in-process instance)")
	fs.BoolVar(&c.latency, "latency", false, "measure fire latency and CPU per 1,000 runs (instance processes), then kill -9 one")
	fs.BoolVar(&c.kill, "kill", false, "measure kill -9 → the victim's items started on another instance")
	fs.BoolVar(&c.throughput, "throughput", false, "measure item executions per second (instance processes)")
	fs.BoolVar(&c.register, "register", false, "measure registering many idle jobs in one process, and its idle cost")
	fs.BoolVar(&c.ranges, "ranges", false, "a SCOPE range job of a million records on 3 instances: calls and requests per fire")
	fs.BoolVar(&c.startup, "startup", false, "3 instance processes started at once, one-item jobs every second: how their fires keep time from the first fire after Start, alone and beside a CPU hog")

	fs.StringVar(&reqItems, "req-items", "1,1000,10000", "-requests: items per job, one measurement each")
	fs.IntVar(&c.reqFires, "req-fires", 10, "-requests: steady-state fires measured (item counts up to 1,000)")
	fs.IntVar(&c.reqBigFires, "req-big-fires", 5, "-requests: steady-state fires measured above 1,000 items")
	fs.DurationVar(&c.reqDeadline, "req-deadline", 30*time.Second, "-requests: longest wait for the first complete fires (warm-up)")
	fs.IntVar(&c.latJobs, "lat-jobs", 30, "-latency: one-item jobs firing every second")
	fs.DurationVar(&c.latDur, "lat-duration", 30*time.Second, "-latency: measured window before the kill")
	fs.DurationVar(&c.latAfterKill, "lat-after-kill", 20*time.Second, "-latency: window of fires after the kill, long enough to hold the take-over (a 10 s session): the survivors' own jobs are measured through it")
	fs.IntVar(&c.killItems, "kill-items", 6, "-kill: items of the job")
	fs.StringVar(&killTimeouts, "kill-session-timeouts", "10s,4s", "-kill: session timeouts, one measurement each")
	fs.IntVar(&c.tputItems, "tput-items", 10000, "-throughput: items of each job (fires every second)")
	fs.IntVar(&c.tputJobs, "tput-jobs", 1, "-throughput: jobs")
	fs.DurationVar(&c.tputDur, "tput-duration", 60*time.Second, "-throughput: measured window")
	fs.IntVar(&c.regJobs, "reg-jobs", 10000, "-register: jobs registered")
	fs.DurationVar(&c.regIdle, "reg-idle", 15*time.Second, "-register: idle window after Start")
	fs.DurationVar(&c.regDeadline, "reg-deadline", 90*time.Second, "-register: longest Add+Start")
	fs.StringVar(&c.regProfile, "reg-cpuprofile", "", "-register: write this process's CPU profile of Add+Start to this file")
	fs.StringVar(&c.stopProfile, "reg-stop-cpuprofile", "", "-register: write this process's CPU profile of the Shutdown to this file")
	fs.StringVar(&c.heapProfile, "reg-heapprofile", "", "-register: write this process's heap profile, taken where the heap per idle job is read (after a GC), to this file; every allocation is sampled, which slows the timings")
	fs.DurationVar(&c.regSettle, "reg-settle", 90*time.Second, "-register: longest wait, after the idle window, for 5s without requests before watches and heap are counted")

	fs.IntVar(&c.startJobs, "start-jobs", 300, "-startup: one-item jobs firing every second")
	fs.StringVar(&startHogs, "start-hogs", "0,2", "-startup: goroutines of this process spinning beside the instances, one measurement each")
	fs.DurationVar(&c.startWindow, "start-window", 20*time.Second, "-startup: measured window from each instance's Start")

	fs.StringVar(&registries, "registry", regZooKeeper, "the registries every measurement runs on, comma-separated, in turn: zookeeper (one standalone server), etcd (one member, in a process of its own), embedded (the embedded default, its member hosted by a process of its own) or postgres (one PostgreSQL server with synchronous commits, its processes' CPU counted together); with more than one, a last table puts their summaries side by side")
	fs.StringVar(&c.instanceBin, "instance-bin", "", "prebuilt instance program (default: go build "+instancePkg+")")
	fs.BoolVar(&c.keep, "keep", false, "keep the work directory (instance logs, the registry's data and log)")
	fs.DurationVar(&c.instLateTrace, "inst-late-trace", 0, "each instance process keeps an execution trace of its last seconds in memory and writes it, as {id}.late.trace in the work directory (with -keep), when a scheduled fire first starts this late (0: none): read it with go tool trace")
	fs.DurationVar(&c.instLateTraceFrom, "inst-late-trace-from", 15*time.Second, "-inst-late-trace: how long after its READY an instance's late fire writes the trace (0: the first fires after Start, for -startup)")
	fs.BoolVar(&c.instProfile, "inst-cpuprofile", false, "a CPU profile of each instance process's whole run, as {id}.cpu.pprof in the work directory (with -keep)")
	fs.BoolVar(&c.verbose, "v", false, "progress and debug logging on stderr")
	fs.BoolVar(&c.instVerbose, "inst-v", false, "the instance processes log at debug level (their logs are in the work directory, with -keep)")
	fs.BoolVar(&c.trace, "trace", false, "the instance processes trace every fire and item run (OpenTelemetry SDK, spans discarded): what tracing costs")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.all {
		c.requests, c.latency, c.kill, c.throughput, c.register, c.ranges, c.startup = true, true, true, true, true, true, true
	}
	if !(c.requests || c.latency || c.kill || c.throughput || c.register || c.ranges || c.startup) {
		fs.Usage()
		return c, errors.New("choose a measurement, or -all")
	}
	var err error
	if c.registries, err = registry.ParseKinds(registries); err != nil {
		return c, fmt.Errorf("-registry: %w", err)
	}
	if c.reqItems, err = benchkit.ParseInts(reqItems); err != nil {
		return c, fmt.Errorf("-req-items: %w", err)
	}
	for f := range strings.SplitSeq(startHogs, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return c, fmt.Errorf("-start-hogs: %q is not a count (0 or more)", f)
		}
		c.startHogs = append(c.startHogs, n)
	}
	if c.killTimeouts, err = benchkit.ParseDurations(killTimeouts); err != nil {
		return c, fmt.Errorf("-kill-session-timeouts: %w", err)
	}
	if c.latJobs < 1 || c.killItems < 1 || c.tputItems < 1 || c.tputJobs < 1 || c.regJobs < 1 || c.reqFires < 1 || c.reqBigFires < 1 || c.startJobs < 1 || c.startWindow < 10*time.Second {
		return c, errors.New("counts must be at least 1, and -start-window at least 10s")
	}
	return c, nil
}

func run(ctx context.Context, cfg config) error {
	if cfg.heapProfile != "" {
		// Every allocation in the profile, so that its figures divide by
		// the jobs exactly; it slows allocation, and so the timings.
		runtime.MemProfileRate = 1
	}
	b := &bench{cfg: cfg, log: benchkit.Logger(cfg.verbose)}
	dir, cleanup, err := benchkit.WorkDir("firebench", cfg.keep)
	if err != nil {
		return err
	}
	defer cleanup()
	b.dir = dir
	fmt.Println("bench machine" + benchkit.Machine().String())

	if cfg.latency || cfg.kill || cfg.throughput || cfg.startup {
		if b.instanceBin = cfg.instanceBin; b.instanceBin == "" {
			bctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			b.instanceBin, err = buildInstance(bctx, b.dir)
			cancel()
			if err != nil {
				return err
			}
		}
	}

	var errs []error
	var cols [][]benchkit.Pair
	for _, kind := range cfg.registries {
		if ctx.Err() != nil {
			break
		}
		rb := *b
		rb.summary = benchkit.KV{}
		if len(cfg.registries) > 1 {
			rb.dir = filepath.Join(dir, kind)
			if err := os.MkdirAll(rb.dir, 0o755); err != nil {
				return err
			}
		}
		if err := rb.onRegistry(ctx, kind); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", kind, err))
		}
		fmt.Println("summary" + new(benchkit.KV).Add("registry", kind).String() + rb.summary.String())
		cols = append(cols, rb.summary.Pairs())
	}
	if len(cfg.registries) > 1 {
		fmt.Printf("\n%s", benchkit.Table(cfg.registries, cols))
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errors.Join(errs...)
}

// onRegistry starts a registry server of kind and runs the chosen
// measurements on it, their headline figures in b.summary.
func (b *bench) onRegistry(ctx context.Context, kind string) error {
	cfg := b.cfg
	zctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	reg, err := registry.Start(zctx, kind, b.dir, b.log)
	cancel()
	if err != nil {
		return err
	}
	b.reg = reg
	defer func() {
		if err := reg.Close(); err != nil {
			b.log.Warn("close the registry", "registry", kind, "err", err)
		}
	}()
	fmt.Println(reg.Line())

	steps := []struct {
		on   bool
		name string
		fn   func(context.Context) error
	}{
		{cfg.requests, "requests", b.measureRequests},
		{cfg.latency, "latency", b.measureLatency},
		{cfg.kill, "kill", b.measureKill},
		{cfg.throughput, "throughput", b.measureThroughput},
		{cfg.register, "register", b.measureRegister},
		{cfg.ranges, "ranges", b.measureRanges},
		{cfg.startup, "startup", b.measureStartup},
	}
	var errs []error
	for _, s := range steps {
		if !s.on {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		t0 := time.Now()
		b.log.Info("measuring", "what", s.name, "registry", kind)
		if err := s.fn(ctx); err != nil {
			// One measurement failing does not hide the others.
			fmt.Println("bench " + s.name + new(benchkit.KV).Add("error", err.Error()).String())
			errs = append(errs, fmt.Errorf("%s: %w", s.name, err))
		}
		b.log.Info("measured", "what", s.name, "took", time.Since(t0).Round(time.Millisecond))
	}
	return errors.Join(errs...)
}
