// Command instance is one instance process of the fire-path benchmark (see
// package github.com/shardjob/shardjob/tools/firebench): a shardjob
// scheduler on its own registry session (ZooKeeper with -servers, etcd
// with -etcd; connected through regcenter.Open) running -jobs no-op jobs named
// {-prefix}{0..jobs-1}, each with -items sharding items on -cron.
//
// It prints "READY" on stdout once its scheduler runs, then one line per
// execution, written when Execute is entered:
//
//	E <job> <item> <fire time, unix ms> <entered, unix ns> <kind>
//
// Lines are buffered and flushed every few milliseconds; the time in a line
// is taken when Execute is entered, not when the line is written, so the
// buffering does not affect the measured latency. The process runs until
// SIGTERM or SIGINT, when it shuts the scheduler down within
// -shutdown-timeout.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
	_ "github.com/shardjob/shardjob/regcenter/etcd"      // -etcd
	_ "github.com/shardjob/shardjob/regcenter/postgres"  // -url postgres://...
	_ "github.com/shardjob/shardjob/regcenter/zookeeper" // -zk
	"github.com/shardjob/shardjob/tools/benchkit"
)

// discardSpans is a span exporter that drops what it is given.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

type options struct {
	id              string
	servers         []string
	url             string
	embeddedDir     string
	etcd            []string
	namespace       string
	prefix          string
	jobs            int
	items           int
	cron            string
	failover        bool
	sessionTimeout  time.Duration
	shutdownTimeout time.Duration
	verbose         bool
	cpuProfile      string
	lateTrace       string
	lateTraceAfter  time.Duration
	lateTraceFrom   time.Duration
	trace           bool
}

func main() {
	var o options
	var servers, etcd string
	flag.StringVar(&o.id, "id", "", "server id (required)")
	flag.StringVar(&servers, "servers", "", "ZooKeeper servers, host:port,... (this or -etcd is required)")
	flag.StringVar(&etcd, "etcd", "", "etcd endpoints, host:port,... (this or -servers is required)")
	flag.StringVar(&o.embeddedDir, "embedded", "", "the Dir of an embedded member another process hosts, instead of -servers, -etcd or -url")
	flag.StringVar(&o.url, "url", "", "a registry by URL (postgres://...), instead of -servers or -etcd")
	flag.StringVar(&o.namespace, "namespace", "firebench", "regcenter namespace")
	flag.StringVar(&o.prefix, "prefix", "j", "job name prefix")
	flag.IntVar(&o.jobs, "jobs", 1, "number of jobs")
	flag.IntVar(&o.items, "items", 1, "sharding items per job")
	flag.StringVar(&o.cron, "cron", "* * * * * *", "cron of every job (with seconds)")
	flag.BoolVar(&o.failover, "failover", false, "turn failover on")
	flag.DurationVar(&o.sessionTimeout, "session-timeout", 0, "session timeout: ZooKeeper's session, etcd's lease TTL (0: regcenter's default)")
	flag.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 5*time.Second, "deadline of the graceful shutdown")
	flag.BoolVar(&o.verbose, "v", false, "debug logging")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.StringVar(&o.lateTrace, "late-trace", "", "keep an execution trace of the last seconds in memory from READY on, and write it to this file when a scheduled fire first starts -late-trace-after late, from -late-trace-from after READY")
	flag.DurationVar(&o.lateTraceFrom, "late-trace-from", 15*time.Second, "how long after READY a late fire writes -late-trace: 15 s leaves out the start-up's fires, some late while instances join; 0 catches them")
	flag.DurationVar(&o.lateTraceAfter, "late-trace-after", 10*time.Millisecond, "how late a scheduled fire's start writes -late-trace")
	flag.BoolVar(&o.trace, "trace", false, "trace every fire and item run with the OpenTelemetry SDK, the spans discarded")
	flag.Parse()
	named := 0
	for _, v := range []string{servers, etcd, o.url, o.embeddedDir} {
		if v != "" {
			named++
		}
	}
	if o.id == "" || named != 1 || o.jobs < 1 || o.items < 1 {
		fmt.Fprintln(os.Stderr, "instance: -id and one of -servers, -etcd, -url and -embedded are required; -jobs and -items must be at least 1")
		os.Exit(2)
	}
	switch {
	case servers != "":
		o.servers = strings.Split(servers, ",")
	case etcd != "":
		o.etcd = strings.Split(etcd, ",")
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "instance:", err)
		os.Exit(1)
	}
}

// out is stdout behind a buffer, flushed a few milliseconds after a line
// is written: the instance's own CPU figure must not pay for a ticker that
// wakes it up when nothing was written.
type out struct {
	mu      sync.Mutex
	w       *bufio.Writer
	pending chan struct{} // holds a token while unflushed lines wait
}

func newOut() *out {
	return &out{w: bufio.NewWriterSize(os.Stdout, 1<<16), pending: make(chan struct{}, 1)}
}

func (o *out) line(s string) {
	o.mu.Lock()
	// A bufio.Writer keeps its first error and returns it from Flush,
	// which flushLoop checks.
	_, _ = o.w.WriteString(s)
	o.mu.Unlock()
	select {
	case o.pending <- struct{}{}:
	default:
	}
}

func (o *out) flush() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.w.Flush()
}

// flushLoop flushes o a few milliseconds after lines are written, until
// ctx ends, then once more.
func (o *out) flushLoop(ctx context.Context, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			if err := o.flush(); err != nil {
				log.Warn("flush stdout", "err", err)
			}
			return
		case <-o.pending:
		}
		// Lines written together (the runs of one fire) share a flush.
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Millisecond):
		}
		if err := o.flush(); err != nil {
			log.Warn("flush stdout", "err", err)
		}
	}
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

	stdout := newOut()
	flushCtx, stopFlush := context.WithCancel(context.Background())
	var flushWG sync.WaitGroup
	flushWG.Add(1)
	go func() {
		defer flushWG.Done()
		stdout.flushLoop(flushCtx, logger)
	}()
	defer func() {
		stopFlush()
		flushWG.Wait()
	}()

	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rc, err := regcenter.Open(cctx, regcenter.Config{Servers: o.servers, Etcd: o.etcd, URL: o.url, EmbeddedDir: o.embeddedDir, Namespace: o.namespace, SessionTimeout: o.sessionTimeout}, regcenter.WithLogger(logger))
	if err != nil {
		return err
	}
	defer rc.Close()

	opts := []job.Option{job.WithServerID(o.id), job.WithLogger(logger)}
	if o.trace {
		// Every span sampled, ended and exported, to an exporter that
		// drops it: the SDK's whole cost, none of a collector's.
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(discardSpans{}))
		defer func() {
			if err := tp.Shutdown(context.Background()); err != nil {
				logger.Warn("tracer provider shutdown", "err", err)
			}
		}()
		opts = append(opts, job.WithTracerProvider(tp))
	}
	s, err := job.NewScheduler(rc, opts...)
	if err != nil {
		return err
	}
	late := newLateTrace(o.lateTrace, o.lateTraceAfter, o.lateTraceFrom, logger)
	defer late.stop()
	execute := job.SimpleFunc(func(_ context.Context, sc job.ShardingContext) error {
		entered := time.Now().UnixNano()
		if sc.Kind == job.KindFire {
			late.observe(time.Duration(entered - sc.FireTime.UnixNano()))
		}
		stdout.line("E " + sc.JobName + " " + strconv.Itoa(sc.Item) + " " +
			strconv.FormatInt(sc.FireTime.UnixMilli(), 10) + " " + strconv.FormatInt(entered, 10) + " " + string(sc.Kind) + " " + strconv.FormatInt(sc.Through.UnixMilli(), 10) + "\n")
		return nil
	})
	for i := range o.jobs {
		cfg := job.Config{Name: o.prefix + strconv.Itoa(i), Cron: o.cron, ShardingTotalCount: o.items, Failover: o.failover}
		if err := s.Add(cctx, cfg, execute); err != nil {
			return err
		}
	}
	if err := s.Start(cctx); err != nil {
		return err
	}
	late.start()
	stdout.line("READY\n")
	if err := stdout.flush(); err != nil {
		return err
	}

	<-ctx.Done()
	sctx, scancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
	defer scancel()
	if err := s.Shutdown(sctx); err != nil {
		logger.Warn("shutdown", "err", err)
	}
	return nil
}
