// Command instance is one instance process of the scale benchmark (see
// package github.com/shardjob/shardjob/tools/scalebench): a shardjob
// scheduler on its own registry session (ZooKeeper with -servers, etcd with
// -etcd, PostgreSQL with -url; connected through regcenter.Open) that adds
// every job package mix draws from -seed, -jobs and -fast-pct, as every
// instance of an ElasticJob namespace registers every job, and starts.
//
// It writes on stdout, each a line of its own:
//
//	STARTED add_ms=… start_ms=… reads=… writes=… multis=… watches=…
//
// once Start has returned (the requests are the center's, regcenter.Stats,
// from before the first Add). From before the first Add, each time it
// receives SIGUSR1 it writes
//
//	STATS reads=… writes=… multis=… watches=… client_watches=… units=… goroutines=…
//
// and each time it receives SIGUSR2, after two garbage collections (and
// after writing a heap profile when -heapprofile names a file),
//
//	HEAP heap=… base=… sys=…
//
// (HeapAlloc now and once the center was open and the scheduler made,
// before any job, and Sys, in bytes).
//
// Each run of an item is one line of the run log (-runlog), written with
// one write(2) when Execute returns, so that what a kill -9 leaves is whole:
//
//	R <job> <item> <fire, unix ms> <through, unix ms> <start, unix ns> <end, unix ns> <kind>
//
// The process runs until SIGTERM or SIGINT, when it shuts the scheduler
// down within -shutdown-timeout.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
	_ "github.com/shardjob/shardjob/regcenter/etcd"      // -etcd
	_ "github.com/shardjob/shardjob/regcenter/postgres"  // -url postgres://...
	_ "github.com/shardjob/shardjob/regcenter/zookeeper" // -servers
	"github.com/shardjob/shardjob/tools/benchkit"
	"github.com/shardjob/shardjob/tools/scalebench/mix"
)

type options struct {
	id              string
	servers, etcd   []string
	url             string
	embeddedDir     string
	namespace       string
	jobs            int
	seed            uint64
	fastPct         float64
	runTime         time.Duration
	runLog          string
	sessionTimeout  time.Duration
	startTimeout    time.Duration
	shutdownTimeout time.Duration
	verbose         bool
	cpuProfile      string
	heapProfile     string
}

func main() {
	var o options
	var servers, etcd string
	flag.StringVar(&o.id, "id", "", "server id (required)")
	flag.StringVar(&servers, "servers", "", "ZooKeeper servers, host:port,...")
	flag.StringVar(&etcd, "etcd", "", "etcd endpoints, host:port,...")
	flag.StringVar(&o.embeddedDir, "embedded", "", "the Dir of an embedded member another process hosts, instead of -servers, -etcd or -url")
	flag.StringVar(&o.url, "url", "", "a registry by URL (postgres://...)")
	flag.StringVar(&o.namespace, "namespace", "scalebench", "regcenter namespace")
	flag.IntVar(&o.jobs, "jobs", 100, "jobs drawn (package mix)")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the draw")
	flag.Float64Var(&o.fastPct, "fast-pct", 1, "percentage of the jobs that fire every second")
	flag.DurationVar(&o.runTime, "run-time", 0, "how long each item's run sleeps")
	flag.StringVar(&o.runLog, "runlog", "", "the run log, one line per run (required)")
	flag.DurationVar(&o.sessionTimeout, "session-timeout", 0, "session timeout (0: regcenter's default)")
	flag.DurationVar(&o.startTimeout, "start-timeout", 15*time.Minute, "longest Add+Start")
	flag.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 30*time.Second, "deadline of the graceful shutdown")
	flag.BoolVar(&o.verbose, "v", false, "debug logging")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.StringVar(&o.heapProfile, "heapprofile", "", "write a heap profile to this file at each SIGUSR2")
	flag.Parse()
	named := 0
	for _, v := range []string{servers, etcd, o.url, o.embeddedDir} {
		if v != "" {
			named++
		}
	}
	if o.id == "" || named != 1 || o.jobs < 1 || o.runLog == "" {
		fmt.Fprintln(os.Stderr, "instance: -id, -runlog and one of -servers, -etcd, -url and -embedded are required; -jobs must be at least 1")
		os.Exit(2)
	}
	if servers != "" {
		o.servers = strings.Split(servers, ",")
	}
	if etcd != "" {
		o.etcd = strings.Split(etcd, ",")
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "instance:", err)
		os.Exit(1)
	}
}

// stdout serializes the protocol's lines.
type stdout struct{ mu sync.Mutex }

func (s *stdout) line(l string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := os.Stdout.WriteString(l + "\n")
	return err
}

func heapAfterGC() runtime.MemStats {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}

func statsKV(st regcenter.Stats) string {
	return fmt.Sprintf("reads=%d writes=%d multis=%d watches=%d", st.Reads, st.Writes, st.Multis, st.Watches)
}

func run(o options) error {
	logger := benchkit.Logger(o.verbose).With("inst", o.id)
	stopProfile, err := benchkit.CPUProfile(o.cpuProfile)
	if err != nil {
		return err
	}
	defer func() {
		if err := stopProfile(); err != nil {
			logger.Warn("cpu profile", "err", err)
		}
	}()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var out stdout

	runLog, err := os.OpenFile(o.runLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer runLog.Close()

	jobs := mix.Generate(o.seed, o.jobs, o.fastPct)

	sctx, cancel := context.WithTimeout(ctx, o.startTimeout)
	defer cancel()
	rc, err := regcenter.Open(sctx, regcenter.Config{Servers: o.servers, Etcd: o.etcd, URL: o.url, EmbeddedDir: o.embeddedDir, Namespace: o.namespace, SessionTimeout: o.sessionTimeout}, regcenter.WithLogger(logger))
	if err != nil {
		return err
	}
	defer rc.Close()
	s, err := job.NewScheduler(rc, job.WithServerID(o.id), job.WithLogger(logger))
	if err != nil {
		return err
	}
	// The heap per job is counted from here: the session's own buffers
	// (go-zookeeper reads into 1.5 MB of its own) are the process's, not
	// any job's.
	base := heapAfterGC()
	execute := job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
		start := time.Now().UnixNano()
		if o.runTime > 0 {
			t := time.NewTimer(o.runTime)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
		line := "R " + sc.JobName + " " + strconv.Itoa(sc.Item) + " " + strconv.FormatInt(sc.FireTime.UnixMilli(), 10) + " " +
			strconv.FormatInt(sc.Through.UnixMilli(), 10) + " " + strconv.FormatInt(start, 10) + " " +
			strconv.FormatInt(time.Now().UnixNano(), 10) + " " + string(sc.Kind) + "\n"
		// One write(2) per line on an O_APPEND file: whole after a kill -9.
		if _, err := runLog.WriteString(line); err != nil {
			logger.Error("run log", "err", err)
		}
		return nil
	})
	st0 := rc.Stats()
	// The signals are answered from here on, during Add and Start too, so
	// that a registration that drags can be looked at (its heap profile).
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGUSR2)
	answerCtx, stopAnswering := context.WithCancel(context.Background())
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		answerSignals(answerCtx, sig, o, &out, logger, rc, st0, s, base)
	}()
	defer func() {
		signal.Stop(sig)
		stopAnswering()
		<-answered
	}()
	t0 := time.Now()
	for _, j := range jobs {
		if err := s.Add(sctx, job.Config{Name: j.Name, Cron: j.Cron, ShardingTotalCount: j.Items}, execute); err != nil {
			return fmt.Errorf("add %s: %w", j.Name, err)
		}
	}
	added := time.Since(t0)
	if err := s.Start(sctx); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	started := time.Since(t0)
	if err := out.line(fmt.Sprintf("STARTED add_ms=%d start_ms=%d %s", added.Milliseconds(), started.Milliseconds(), statsKV(rc.Stats().Sub(st0)))); err != nil {
		return err
	}

	<-ctx.Done()
	dctx, dcancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
	defer dcancel()
	if err := s.Shutdown(dctx); err != nil {
		logger.Warn("shutdown", "err", err)
	}
	return nil
}

// answerSignals answers SIGUSR1 with a STATS line and SIGUSR2 with a HEAP
// line (and a heap profile with -heapprofile) until ctx ends.
func answerSignals(ctx context.Context, sig <-chan os.Signal, o options, out *stdout, logger *slog.Logger, rc regcenter.Center, st0 regcenter.Stats, s *job.Scheduler, base runtime.MemStats) {
	type watchCounter interface{ WatchCount() int }
	for {
		var v os.Signal
		select {
		case <-ctx.Done():
			return
		case v = <-sig:
		}
		var l string
		if v == syscall.SIGUSR1 {
			cw := -1
			if w, ok := rc.(watchCounter); ok {
				cw = w.WatchCount()
			}
			l = fmt.Sprintf("STATS %s client_watches=%d units=%d goroutines=%d", statsKV(rc.Stats().Sub(st0)), cw, s.Placement().Units, runtime.NumGoroutine())
		} else {
			m := heapAfterGC()
			if o.heapProfile != "" {
				if err := benchkit.HeapProfile(o.heapProfile); err != nil {
					logger.Error("heap profile", "err", err)
				}
			}
			l = fmt.Sprintf("HEAP heap=%d base=%d sys=%d", m.HeapAlloc, base.HeapAlloc, m.Sys)
		}
		if err := out.line(l); err != nil {
			logger.Error("stdout", "err", err)
			return
		}
	}
}
