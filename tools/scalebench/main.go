// Command scalebench measures shardjob at the scale of one large
// namespace: J jobs on N instance processes, every instance registering
// every job, as ElasticJob-Lite's instances do, with items placed across
// the instances (issue 44, item 1). It uses the public API only (each
// instance, tools/scalebench/instance, runs job.NewScheduler, Add and Start
// on a center from regcenter.Open) against a registry server it starts
// itself (tools/benchkit/registry: ZooKeeper, etcd or PostgreSQL).
//
// Usage (from the module's checkout):
//
//	go run ./tools/scalebench -registry zookeeper -jobs 100000 -instances 10
//	go run ./tools/scalebench -h     # every flag
//
// The jobs are package mix's draw from -seed: 1 % fire every second
// (-fast-pct), the others hourly or daily at drawn times, each with 1 to
// 100 items (log-uniform). The bench goes through these steps, each
// bounded in time, and prints each figure as a line "bench NAME
// key=value ...", a last line "summary key=value ..." repeating the
// headline figures:
//
//   - register: the instances started together; the time until every
//     instance's Start returned, and each one's requests (regcenter.Stats)
//     per job; the server's and the instances' CPU.
//   - placed: the time until every every-second job's items are placed in
//     the namespace's load table and until each of them has run; how many
//     of all the jobs are placed (a job that fires later than a minute
//     from now is placed a minute before its fire: docs/design.md,
//     "Registration and idle jobs"), and the table's size.
//   - idle: requests per second of all the instances over a quiet window
//     (-idle), and the server's own count, beside the runs in it.
//   - size: heap per job per instance (HeapAlloc after GC, less the heap
//     with the center open and the scheduler made, before any job,
//     reported by each instance), the server's RSS, data size, nodes and
//     watches.
//   - kill: kill -9 of one instance; the time until every item it ran in
//     its last 3 s runs on a survivor (goal: the session timeout + 1 s);
//     every fire of the every-second jobs covered by a run (none lost);
//     the survivors' fire latency p99 before and after.
//   - rolling: each instance in turn stopped with SIGTERM (a graceful
//     shutdown) and started again, waiting for its Start; no fire lost.
//   - overlaps: over the whole run, two runs of one job's item at once,
//     from the instances' run logs (each run's job, item, fire, start and
//     end).
//
// Every process it starts is killed when it ends, on an error or Ctrl-C
// too. The machine's other load shows in every time; request counts do
// not depend on it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/shardjob/shardjob/tools/benchkit"
	"github.com/shardjob/shardjob/tools/benchkit/registry"
	"github.com/shardjob/shardjob/tools/scalebench/mix"
)

// config holds the flags.
type config struct {
	registry        string
	jobs, instances int
	seed            uint64
	fastPct         float64
	namespace       string
	sessionTimeout  time.Duration
	regDeadline     time.Duration
	placeDeadline   time.Duration
	idle            time.Duration
	window          time.Duration
	shutdownTimeout time.Duration
	settle          time.Duration
	zkHeap          string
	skipKill        bool
	skipRolling     bool
	instanceBin     string
	keep            bool
	profile         bool
	verbose         bool
	instVerbose     bool
}

func main() { benchkit.Main("scalebench", parseFlags, run) }

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("scalebench", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: go run ./tools/scalebench [-registry zookeeper|etcd|postgres] [-jobs J] [-instances N] [flags]")
		fs.PrintDefaults()
	}
	fs.StringVar(&c.registry, "registry", registry.ZooKeeper, "the registry server started: zookeeper, etcd or postgres")
	fs.IntVar(&c.jobs, "jobs", 100_000, "jobs in the namespace, every one registered by every instance")
	fs.IntVar(&c.instances, "instances", 10, "instance processes")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the jobs' draw (package mix)")
	fs.Float64Var(&c.fastPct, "fast-pct", 1, "percentage of the jobs that fire every second")
	fs.StringVar(&c.namespace, "namespace", "scalebench", "the namespace")
	fs.DurationVar(&c.sessionTimeout, "session-timeout", 10*time.Second, "the instances' session timeout (ZooKeeper's session, etcd's lease, PostgreSQL's)")
	fs.DurationVar(&c.regDeadline, "reg-deadline", 20*time.Minute, "longest wait for every instance's Start")
	fs.DurationVar(&c.placeDeadline, "place-deadline", 5*time.Minute, "longest wait, after the Starts, for the every-second jobs to be placed and run")
	fs.DurationVar(&c.idle, "idle", 30*time.Second, "the quiet window whose requests are counted")
	fs.DurationVar(&c.window, "window", 20*time.Second, "the latency windows before and after the kill")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", time.Minute, "the instances' graceful shutdown deadline (rolling restart)")
	fs.DurationVar(&c.settle, "settle", 10*time.Second, "the wait after the rolling restart before its fires are checked")
	fs.StringVar(&c.zkHeap, "zk-heap", "4g", "ZooKeeper's JVM heap (-Xmx)")
	fs.BoolVar(&c.skipKill, "skip-kill", false, "skip the kill -9")
	fs.BoolVar(&c.skipRolling, "skip-rolling", false, "skip the rolling restart")
	fs.StringVar(&c.instanceBin, "instance-bin", "", "prebuilt instance program (default: go build "+instancePkg+")")
	fs.BoolVar(&c.keep, "keep", false, "keep the work directory (instance logs, run logs, profiles, the registry's data)")
	fs.BoolVar(&c.profile, "profile", false, "each instance writes a CPU profile of its life and a heap profile at the size step, in the work directory (with -keep)")
	fs.BoolVar(&c.verbose, "v", false, "progress and debug logging on stderr")
	fs.BoolVar(&c.instVerbose, "inst-v", false, "the instances log at debug level (their logs are in the work directory, with -keep)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := registry.CheckKind(c.registry); err != nil {
		return c, fmt.Errorf("-registry: %w", err)
	}
	if c.jobs < 1 || c.instances < 2 {
		return c, errors.New("-jobs must be at least 1 and -instances at least 2 (one is killed)")
	}
	if c.fastPct < 0 || c.fastPct > 100 {
		return c, errors.New("-fast-pct must be within 0..100")
	}
	if c.sessionTimeout <= 0 || c.regDeadline <= 0 || c.placeDeadline <= 0 || c.idle <= 0 || c.window <= 0 || c.shutdownTimeout <= 0 || c.settle <= 0 {
		return c, errors.New("durations must be positive")
	}
	return c, nil
}

// bench is one run of the program.
type bench struct {
	cfg       config
	log       *slog.Logger
	reg       *registry.Registry
	dir       string
	bin       string
	jobs      []mix.Job
	jobIdx    map[string]int // job name → index in jobs
	items     map[string]int // job name → items
	fast      map[int]int    // every-second jobs: index → items
	insts     []*inst        // by index; a restarted instance replaces its slot
	starts    []int          // processes started per index
	runs      *runBook
	t0        time.Time          // when the first instance was started
	lastStats []map[string]int64 // the instances' last STATS lines
	summary   benchkit.KV
}

func run(ctx context.Context, cfg config) error {
	b := &bench{cfg: cfg, log: benchkit.Logger(cfg.verbose)}
	dir, cleanup, err := benchkit.WorkDir("scalebench", cfg.keep)
	if err != nil {
		return err
	}
	defer cleanup()
	b.dir = dir
	fmt.Println("bench machine" + benchkit.Machine().String())

	b.jobs = mix.Generate(cfg.seed, cfg.jobs, cfg.fastPct)
	b.jobIdx, b.items, b.fast = map[string]int{}, map[string]int{}, map[int]int{}
	var classes [3]int
	for i, j := range b.jobs {
		b.jobIdx[j.Name] = i
		b.items[j.Name] = j.Items
		classes[j.Class]++
		if j.Class == mix.Second {
			b.fast[i] = j.Items
		}
	}
	fastUnits := 0
	for _, n := range b.fast {
		fastUnits += n
	}
	fmt.Println("bench mix" + new(benchkit.KV).Add("seed", cfg.seed).Add("jobs", cfg.jobs).Add("instances", cfg.instances).
		Add("every_second", classes[mix.Second]).Add("hourly", classes[mix.Hourly]).Add("daily", classes[mix.Daily]).
		Add("units", mix.Units(b.jobs)).Add("every_second_units", fastUnits).Add("session_timeout", cfg.sessionTimeout).String())
	b.runs = newRunBook(b)

	if b.bin = cfg.instanceBin; b.bin == "" {
		bctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		b.bin, err = buildInstance(bctx, b.dir)
		cancel()
		if err != nil {
			return err
		}
	}
	zctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	b.reg, err = registry.StartWith(zctx, cfg.registry, b.dir, b.log, registry.Options{ZooKeeperHeap: cfg.zkHeap})
	cancel()
	if err != nil {
		return err
	}
	defer func() {
		if err := b.reg.Close(); err != nil {
			b.log.Warn("close the registry", "registry", cfg.registry, "err", err)
		}
	}()
	fmt.Println(b.reg.Line())

	b.insts = make([]*inst, cfg.instances)
	b.starts = make([]int, cfg.instances)
	defer b.stopAll() // every instance dies with the bench, however it ends

	steps := []struct {
		on   bool
		name string
		fn   func(context.Context) error
	}{
		{true, "register", b.measureRegister},
		{true, "placed", b.measurePlaced},
		{true, "idle", b.measureIdle},
		{true, "size", b.measureSize},
		{!cfg.skipKill, "kill", b.measureKill},
		{!cfg.skipRolling, "rolling", b.measureRolling},
		{true, "overlaps", b.measureOverlaps},
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
		b.log.Info("measuring", "what", s.name)
		if err := s.fn(ctx); err != nil {
			fmt.Println("bench " + s.name + new(benchkit.KV).Add("error", err.Error()).String())
			errs = append(errs, fmt.Errorf("%s: %w", s.name, err))
			if s.name == "register" {
				break // nothing after it stands without the instances
			}
		}
		b.log.Info("measured", "what", s.name, "took", time.Since(t0).Round(time.Millisecond))
	}
	fmt.Println("summary" + b.summary.String())
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errors.Join(errs...)
}
