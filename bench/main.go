// Command bench measures shardjob beside the Go schedulers a developer
// would otherwise pick, and times its failover and resharding. It is its
// own module, so that the SDK's go.mod does not pull the peers in.
//
// Usage, from bench/ (ZooKeeper and Redis as scripts/zookeeper.sh and
// scripts/redis.sh find or install them; etcd needs nothing installed):
//
//	go run . -all                 # every benchmark (about 25 minutes)
//	go run . -peers               # shardjob, gocron + Redis lock, dcron + Redis: J jobs every second on 3 node processes, kill -9 the busiest at half time
//	go run . -peers -peer-systems shardjob-etcd,dcron-etcd   # the same on etcd: shardjob on etcd beside dcron with its etcd driver
//	go run . -failover            # kill -9 an instance mid-run, ≥ 20 trials: session expiry → items started elsewhere
//	go run . -reshard             # 1 → 100 instances, 1,000 and 10,000 items: the fire that finds the reshard due → every instance running its new items
//	go run . -firecost            # what each scheduler itself spends per run: J jobs every second in one process, nothing recorded
//	go run . -dispatch            # the dispatcher beside River on one PostgreSQL: insert and run throughput, start latency, CPU per 1,000 tasks, with and without caps
//	go run . -h                   # every flag
//
// It starts, on loopback, the servers the chosen systems need: its own
// standalone ZooKeeper (regcenter/zktest; always for -failover and
// -reshard), its own Redis (redis-server) for gocron and dcron, its own
// etcd for shardjob-etcd and dcron-etcd, and for -dispatch its own
// PostgreSQL (internal/testing/pgtest); it stops everything it started.
//
// The etcd cluster is regcenter/etcdtest's: -etcd-members members (default
// 1, a single member as ZooKeeper and Redis run standalone; 3 for a
// cluster), each the etcd server of go.etcd.io/etcd/server/v3 in a process
// of its own (this program, started again as a member), so that the
// server CPU of the etcd systems is read from /proc of the member
// processes (the sum over all members) as it is of the ZooKeeper and Redis
// processes. The "bench etcd" line and the etcd systems' settings state
// the number of members. etcd gets no warm-up run: -peer-warmup is for
// ZooKeeper's JVM, and etcd compiles nothing at run time. Each
// figure is printed as a line "bench NAME key=value ...", and a last line
// "summary key=value ..." repeats the headline figures. With -plots DIR it
// also draws the peers' latency distributions, runs per node and recovery
// after the kill as PNG files in DIR.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	etcdversion "go.etcd.io/etcd/api/v3/version"

	"github.com/shardjob/shardjob/regcenter/etcdtest"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/tools/benchkit"
	"github.com/shardjob/shardjob/tools/proc"
)

// config holds the flags.
type config struct {
	peers, failover, reshard, fireCost, dispatch bool

	peerSystems  []string
	peerJobs     []int
	peerDuration time.Duration
	peerWork     time.Duration
	peerWarmup   time.Duration
	killAfter    time.Duration
	tunedTimeout time.Duration

	foTrials  int
	foTimeout time.Duration
	foItems   int

	fcSystems  []string
	fcJobs     []int
	fcWarmup   time.Duration
	fcDuration time.Duration

	etcdMembers int

	rsItems     []int
	rsInstances int
	rsFireLead  time.Duration

	dp dpParams

	plots       string
	keep        bool
	verbose     bool
	nodeVerbose bool
	nodeProfile bool
}

// bench is one run of the program: its servers, work directory and
// results.
type bench struct {
	cfg     config
	log     *slog.Logger
	dir     string
	zk      *zktest.Cluster
	etcd    *etcdtest.Cluster
	redis   *redisServer
	nodeBin string
	summary benchkit.KV
	peers   []*peerResult
	warmed  bool // ZooKeeper has had its warm-up (warmUp)
}

func main() { benchkit.Main("bench", parseFlags, run) }

func parseFlags(args []string) (config, error) {
	var c config
	var all bool
	var systems, jobs, rsItems string
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: go run . [-all | -peers -failover -reshard -firecost -dispatch] [flags]")
		fs.PrintDefaults()
	}
	fs.BoolVar(&all, "all", false, "run every benchmark")
	fs.BoolVar(&c.peers, "peers", false, "shardjob beside gocron and dcron: J jobs every second on 3 node processes, kill -9 the busiest")
	fs.BoolVar(&c.failover, "failover", false, "kill -9 an instance mid-run: session expiry → its items started elsewhere")
	fs.BoolVar(&c.reshard, "reshard", false, "1 → N instances: the fire that finds the reshard due → every instance running its new items")
	fs.BoolVar(&c.fireCost, "firecost", false, "what each scheduler itself spends per run: J jobs every second in one node process, runs counted, not recorded")
	fs.BoolVar(&c.dispatch, "dispatch", false, "the dispatcher beside River on one PostgreSQL: insert and run throughput, start latency, CPU per 1,000 tasks, with and without caps")

	var dpSys, dpCapNames string
	fs.StringVar(&dpSys, "dp-systems", "shardjob,river", "-dispatch: systems, in the order run (shardjob, river)")
	fs.StringVar(&dpCapNames, "dp-caps", "open,capped", "-dispatch: cap settings (open: tenants 1,000 each, global 3,000; capped: 5, 10, 20, global 30)")
	fs.IntVar(&c.dp.tasks, "dp-tasks", 100000, "-dispatch: tasks inserted, then run, per system and cap setting")
	fs.IntVar(&c.dp.rate, "dp-rate", 1000, "-dispatch: tasks a second fed for the start latency")
	fs.DurationVar(&c.dp.duration, "dp-duration", 30*time.Second, "-dispatch: how long the latency feed lasts")
	fs.IntVar(&c.dp.nodes, "dp-nodes", 3, "-dispatch: dispatcher nodes and River clients, in this process")

	fs.StringVar(&systems, "peer-systems", "shardjob,shardjob-tuned,gocron,dcron", "-peers: systems, in the order run (also shardjob-nolead: the defaults with WithFireLead(0); shardjob-unmonitored: the defaults with Config.Unmonitored; shardjob-everyrun: the defaults with WithCompletionJournal(false), every completion's record written; shardjob-etcd: the defaults on etcd; dcron-etcd: dcron with its etcd driver)")
	fs.StringVar(&jobs, "peer-jobs", "30,300", "-peers: job counts J, one run each per system")
	fs.DurationVar(&c.peerDuration, "peer-duration", 60*time.Second, "-peers: measured time per run; the busiest node is killed at half time")
	fs.DurationVar(&c.peerWarmup, "peer-warmup", 60*time.Second, "-peers, -firecost: an unmeasured shardjob run (J = 30, 3 nodes) before the first measured one, so that ZooKeeper's JVM has compiled its hot paths (0: none)")
	fs.DurationVar(&c.peerWork, "peer-work", 100*time.Millisecond, "-peers: how long each run takes (runs are in flight at the kill)")
	fs.DurationVar(&c.killAfter, "peer-kill-offset", 50*time.Millisecond, "-peers: the kill comes this long after a tick")
	fs.DurationVar(&c.tunedTimeout, "tuned-session-timeout", 2*time.Second, "-peers: shardjob-tuned's ZooKeeper session timeout")

	var fcSystems, fcJobs string
	fs.StringVar(&fcSystems, "fc-systems", "shardjob,shardjob-unmonitored,gocron,dcron", "-firecost: systems, in the order run (the names of -peer-systems, shardjob-etcd and dcron-etcd among them)")
	fs.IntVar(&c.etcdMembers, "etcd-members", 1, "-peers, -firecost: members of the etcd cluster of shardjob-etcd and dcron-etcd, each a process of its own (1: a single member, as ZooKeeper and Redis run standalone; the server CPU is the sum over the members)")
	fs.StringVar(&fcJobs, "fc-jobs", "30,300", "-firecost: job counts J, one run each per system")
	fs.DurationVar(&c.fcWarmup, "fc-warmup", 15*time.Second, "-firecost: unmeasured time after the scheduler started")
	fs.DurationVar(&c.fcDuration, "fc-duration", 30*time.Second, "-firecost: measured time per run")

	fs.IntVar(&c.foTrials, "fo-trials", 20, "-failover: trials")
	fs.DurationVar(&c.foTimeout, "fo-session-timeout", 2*time.Second, "-failover: the instances' session timeout")
	fs.IntVar(&c.foItems, "fo-items", 6, "-failover: items of the job")

	fs.StringVar(&rsItems, "rs-items", "1000,10000", "-reshard: items of the job, one run each")
	fs.IntVar(&c.rsInstances, "rs-instances", 100, "-reshard: instances after the scale-out")
	fs.DurationVar(&c.rsFireLead, "rs-fire-lead", -1, "-reshard: the instances' fire lead (job.WithFireLead; negative: the SDK's default)")

	fs.StringVar(&c.plots, "plots", "", "-peers: write PNG plots into this directory (e.g. ../docs/perf)")
	fs.BoolVar(&c.keep, "keep", false, "keep the work directory (node records and logs, the servers' data and logs)")
	fs.BoolVar(&c.verbose, "v", false, "progress on stderr")
	fs.BoolVar(&c.nodeProfile, "node-cpuprofile", false, "a CPU profile of each node process that stops gracefully, as {id}.cpu.pprof in its run's work directory (with -keep; -firecost: of its measured window)")
	fs.BoolVar(&c.nodeVerbose, "node-v", false, "debug logging of the node processes, into their logs in the work directory (with -keep)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if all {
		c.peers, c.failover, c.reshard, c.fireCost, c.dispatch = true, true, true, true, true
	}
	if !(c.peers || c.failover || c.reshard || c.fireCost || c.dispatch) {
		fs.Usage()
		return c, errors.New("choose a benchmark, or -all")
	}
	var err error
	if c.dp.systems, err = parseList("-dp-systems", dpSys, dpSystems); err != nil {
		return c, err
	}
	if c.dp.capSets, err = parseList("-dp-caps", dpCapNames, slices.Sorted(maps.Keys(dpCapSets))); err != nil {
		return c, err
	}
	if err := c.dp.validate(); err != nil {
		return c, err
	}
	if c.peerSystems, err = parseSystems("-peer-systems", systems, c); err != nil {
		return c, err
	}
	if c.fcSystems, err = parseSystems("-fc-systems", fcSystems, c); err != nil {
		return c, err
	}
	if c.fcJobs, err = benchkit.ParseInts(fcJobs); err != nil {
		return c, fmt.Errorf("-fc-jobs: %w", err)
	}
	if c.fcWarmup < 0 || c.fcDuration < 5*time.Second {
		return c, errors.New("-fc-warmup must not be negative, -fc-duration at least 5s")
	}
	if c.peerJobs, err = benchkit.ParseInts(jobs); err != nil {
		return c, fmt.Errorf("-peer-jobs: %w", err)
	}
	if c.rsItems, err = benchkit.ParseInts(rsItems); err != nil {
		return c, fmt.Errorf("-rs-items: %w", err)
	}
	if c.peerDuration < 10*time.Second {
		return c, errors.New("-peer-duration must be at least 10s")
	}
	if c.etcdMembers < 1 {
		return c, fmt.Errorf("-etcd-members must be at least 1, not %d", c.etcdMembers)
	}
	if c.foTrials < 1 || c.foItems < 1 || c.rsInstances < 2 {
		return c, errors.New("-fo-trials and -fo-items must be at least 1, -rs-instances at least 2")
	}
	return c, nil
}

func run(ctx context.Context, cfg config) error {
	level := slog.LevelWarn
	if cfg.verbose {
		level = slog.LevelInfo
	}
	b := &bench{cfg: cfg, log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))}
	dir, cleanup, err := benchkit.WorkDir("shardjob-bench", cfg.keep)
	if err != nil {
		return err
	}
	defer cleanup()
	b.dir = dir
	fmt.Println("bench machine" + benchkit.Machine().String())

	if cfg.peers || cfg.failover || cfg.fireCost {
		bctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		b.nodeBin = filepath.Join(b.dir, "node")
		err := proc.GoBuild(bctx, ".", nodePkg, b.nodeBin)
		cancel()
		if err != nil {
			return fmt.Errorf("%w (run from bench/)", err)
		}
	}

	need := registries(cfg) // -dispatch needs none of them
	if need[regZooKeeper] {
		zctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		// The JVM's full compiler, as a production server runs it (zktest stops
		// at C1 for a fast start), as tools/firebench does.
		b.zk, err = zktest.StartCluster(zctx, zktest.Options{Dir: filepath.Join(b.dir, "zk"), Logger: b.log, JavaOpts: []string{"-XX:TieredStopAtLevel=4", "-Xmx1g"}})
		cancel()
		if err != nil {
			return err
		}
		defer func() {
			if err := b.zk.Close(); err != nil {
				b.log.Warn("close ZooKeeper", "err", err)
			}
		}()
		fmt.Println("bench zookeeper" + new(benchkit.KV).Add("servers", b.zk.ConnectString()).Add("pid", b.zk.PID(0)).String())
	}
	if need[regEtcd] {
		ectx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		b.etcd, err = etcdtest.StartCluster(ectx, etcdtest.Options{Size: cfg.etcdMembers, Processes: true, Dir: filepath.Join(b.dir, "etcd"), Logger: b.log})
		cancel()
		if err != nil {
			return err
		}
		defer func() {
			if err := b.etcd.Close(); err != nil {
				b.log.Warn("close etcd", "err", err)
			}
		}()
		pids, err := b.etcdPIDs()
		if err != nil {
			return err
		}
		fmt.Println("bench etcd" + new(benchkit.KV).Add("members", b.etcd.Size()).Add("endpoints", b.etcd.ConnectString()).
			Add("pids", benchkit.JoinInts(pids, ",")).Add("version", etcdversion.Version).String())
	}
	if need[regRedis] {
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		b.redis, err = startRedis(rctx, filepath.Join(b.dir, "redis"))
		cancel()
		if err != nil {
			return err
		}
		defer func() {
			if err := b.redis.close(); err != nil {
				b.log.Warn("stop Redis", "err", err)
			}
		}()
		fmt.Println("bench redis" + new(benchkit.KV).Add("addr", b.redis.addr).Add("pid", b.redis.proc.PID()).Add("version", b.redis.version).String())
	}

	steps := []struct {
		on   bool
		name string
		fn   func(context.Context) error
	}{
		{cfg.peers, "peers", b.measurePeers},
		{cfg.failover, "failover", b.measureFailover},
		{cfg.reshard, "reshard", b.measureReshard},
		{cfg.fireCost, "firecost", b.measureFireCost},
		{cfg.dispatch, "dispatch", b.measureDispatchPeer},
	}
	var errs []error
	for _, s := range steps {
		if !s.on || ctx.Err() != nil {
			continue
		}
		t0 := time.Now()
		b.log.Info("measuring", "what", s.name)
		if err := s.fn(ctx); err != nil {
			// One benchmark failing does not hide the others.
			fmt.Println("bench " + s.name + new(benchkit.KV).Add("error", err.Error()).String())
			errs = append(errs, fmt.Errorf("%s: %w", s.name, err))
		}
		b.log.Info("measured", "what", s.name, "took", time.Since(t0).Round(time.Millisecond))
	}
	if cfg.plots != "" && len(b.peers) > 0 {
		if err := b.plot(cfg.plots); err != nil {
			errs = append(errs, fmt.Errorf("plots: %w", err))
		}
	}
	fmt.Println("summary" + b.summary.String())
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errors.Join(errs...)
}

// sdkLog is the logger handed to in-process schedulers: warnings only,
// since a hundred instances' progress would drown the benchmark's own.
func (b *bench) sdkLog() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// parseSystems reads flag's comma-separated list of systems: each one
// known, and named once (each system's run has one work directory and
// namespace).
func parseSystems(flag, list string, c config) ([]string, error) {
	var out []string
	for s := range strings.SplitSeq(list, ",") {
		s = strings.TrimSpace(s)
		if _, ok := systemArgs(s, c); !ok {
			return nil, fmt.Errorf("%s: unknown system %q", flag, s)
		}
		if slices.Contains(out, s) {
			return nil, fmt.Errorf("%s: system %q named twice", flag, s)
		}
		out = append(out, s)
	}
	return out, nil
}
