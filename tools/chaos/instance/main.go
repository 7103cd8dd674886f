// Command instance is one instance process of the chaos harness
// (see package github.com/shardjob/shardjob/tools/chaos): a shardjob
// scheduler running one test job whose executions log what they do to the
// shared event log.
//
// Each execution writes a begin line, works for -work (± -jitter, honouring
// its context), then calls ShardingContext.StillOwner and, only if that
// passes, writes an end line — the end line is the execution's side effect.
// Otherwise it writes an abort line and does nothing else.
//
// The process connects to ZooKeeper, etcd or PostgreSQL (-registry) through
// regcenter.Open (retrying while the registry is unreachable), starts
// the scheduler (retrying while its server id is still held by its own
// previous, crashed life), and runs until SIGTERM or SIGINT, when it shuts
// the scheduler down gracefully within -shutdown-timeout.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/listener"
	"github.com/shardjob/shardjob/regcenter"
	_ "github.com/shardjob/shardjob/regcenter/etcd"      // -registry etcd
	_ "github.com/shardjob/shardjob/regcenter/postgres"  // -registry postgres: regcenter.Open serves postgres:// URLs
	_ "github.com/shardjob/shardjob/regcenter/zookeeper" // -registry zookeeper
	"github.com/shardjob/shardjob/tools/chaos/eventlog"
)

type options struct {
	id              string
	registry        string
	servers         []string
	namespace       string
	jobName         string
	cron            string
	items           int
	work            time.Duration
	jitter          time.Duration
	recordInterval  time.Duration
	sessionTimeout  time.Duration
	shutdownTimeout time.Duration
	logPath         string
	verbose         bool
	overlap         string
	longEvery       int
	long            time.Duration
	chain           int
	afterTimeout    time.Duration
	fireJitter      time.Duration
	failEvery       int
}

func main() {
	var o options
	var servers string
	flag.StringVar(&o.id, "id", "", "server id (required)")
	flag.StringVar(&o.registry, "registry", "zookeeper", "the registry: zookeeper, etcd or postgres")
	flag.StringVar(&servers, "servers", "", "the registry's members (ZooKeeper servers or etcd endpoints), host:port,... (required)")
	flag.StringVar(&o.namespace, "namespace", "chaos", "regcenter namespace")
	flag.StringVar(&o.jobName, "job", "chaos", "job name")
	flag.StringVar(&o.cron, "cron", "* * * * * *", "job cron (with seconds)")
	flag.IntVar(&o.items, "items", 6, "sharding items")
	flag.DurationVar(&o.work, "work", 1500*time.Millisecond, "how long an execution works")
	flag.DurationVar(&o.jitter, "jitter", 200*time.Millisecond, "random ± added to -work")
	flag.DurationVar(&o.recordInterval, "record-interval", job.DefaultRecordInterval, "how often at most a held item's completed record is written (job.WithRecordInterval)")
	flag.DurationVar(&o.sessionTimeout, "session-timeout", 4*time.Second, "session timeout (ZooKeeper's, or etcd's lease TTL)")
	flag.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 5*time.Second, "deadline of the graceful shutdown")
	flag.StringVar(&o.logPath, "log", "", "event log to append to (required)")
	flag.BoolVar(&o.verbose, "v", false, "debug logging")
	flag.StringVar(&o.overlap, "overlap", "", "the job's overlap policy (buffer-one, skip, replace; default: the job's default)")
	flag.IntVar(&o.longEvery, "long-every", 0, "every this many executions of this process works -long instead of -work (0: none)")
	flag.DurationVar(&o.long, "long", 3*time.Second, "how long a long execution works (see -long-every)")
	flag.IntVar(&o.chain, "chain", 1, "jobs run, each after the one before: JOB, JOB-2, ... (items of job k logged as k*items+item)")
	flag.DurationVar(&o.afterTimeout, "after-timeout", time.Minute, "a dependent job's wait for its parent (see -chain)")
	flag.IntVar(&o.failEvery, "fail-every", 0, "every this many executions of this process fails at its first attempt, after StillOwner passed, and the jobs retry a failed run twice (job.Config.Retry; 0: none)")
	flag.DurationVar(&o.fireJitter, "fire-jitter", 0, "every job's schedule jitter (job.Config.Jitter), under a second; the log's fire times are the schedule's times before it")
	flag.Parse()
	if o.id == "" || servers == "" || o.logPath == "" {
		fmt.Fprintln(os.Stderr, "instance: -id, -servers and -log are required")
		os.Exit(2)
	}
	if o.registry != "zookeeper" && o.registry != "etcd" && o.registry != "postgres" {
		fmt.Fprintf(os.Stderr, "instance: -registry %q: need zookeeper, etcd or postgres\n", o.registry)
		os.Exit(2)
	}
	o.servers = strings.Split(servers, ",")
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "instance:", err)
		os.Exit(1)
	}
}

type instance struct {
	o   options
	log *slog.Logger
	ev  *eventlog.Writer
	pid int
	seq atomic.Int64
}

func (in *instance) write(e eventlog.Event) {
	e.Inst, e.PID = in.o.id, in.pid
	if err := in.ev.Write(e); err != nil {
		in.log.Error("cannot write event log", "err", err)
	}
}

func run(o options) error {
	level := slog.LevelInfo
	if o.verbose || os.Getenv("SHARDJOB_CHAOS_VERBOSE") != "" {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})).With("inst", o.id)
	ev, err := eventlog.Open(o.logPath)
	if err != nil {
		return err
	}
	defer ev.Close()
	in := &instance{o: o, log: logger, ev: ev, pid: os.Getpid()}
	in.write(eventlog.Event{Ev: eventlog.ProcStart, Detail: strings.Join(o.servers, ",")})

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	rc, err := in.connect(ctx)
	if err != nil {
		return err
	}
	defer rc.Close()
	cancelSess := rc.OnSession(func(se regcenter.SessionEvent) {
		e := eventlog.Event{Ev: eventlog.Session, Detail: se.Type.String() + " " + se.Session.String()}
		if se.Type == regcenter.SessionLost {
			if err := se.Session.Err(); err != nil {
				e.Err = err.Error()
			}
		}
		in.write(e)
	})
	defer cancelSess()

	s, err := in.start(ctx, rc)
	if err != nil {
		return err
	}
	in.write(eventlog.Event{Ev: eventlog.Ready, Detail: rc.Session().String()})
	logger.Info("instance ready")
	fmt.Println("READY") // the harness waits for this line

	<-ctx.Done()
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
	defer cancel()
	serr := s.Shutdown(sctx)
	e := eventlog.Event{Ev: eventlog.ProcExit}
	if serr != nil {
		e.Err = serr.Error()
		logger.Warn("shutdown", "err", serr)
	}
	in.write(e)
	return nil
}

// connect retries until the registry gives a session or ctx ends: an
// instance restarted while the cluster has no quorum waits for it.
func (in *instance) connect(ctx context.Context) (regcenter.Center, error) {
	cfg := regcenter.Config{Namespace: in.o.namespace, SessionTimeout: in.o.sessionTimeout}
	switch in.o.registry {
	case "etcd":
		cfg.Etcd = in.o.servers
	case "postgres":
		// The server's "postgres" database as the superuser, trusted on
		// loopback: the harness's pgURL.
		cfg.URL = "postgres://postgres@" + in.o.servers[0] + "/postgres?sslmode=disable"
	default:
		cfg.Servers = in.o.servers
	}
	for {
		rc, err := regcenter.Open(ctx, cfg, regcenter.WithLogger(in.log))
		if err == nil {
			return rc, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !errors.Is(err, regcenter.ErrUnreachable) {
			return nil, err
		}
		in.log.Warn("registry unreachable; retrying", "registry", in.o.registry, "err", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// start starts a scheduler, retrying with a fresh one while Start fails (the
// server id still held by this instance's previous life, or ZooKeeper
// unavailable).
func (in *instance) start(ctx context.Context, rc regcenter.Center) (*job.Scheduler, error) {
	for {
		s, err := job.NewScheduler(rc, job.WithServerID(in.o.id), job.WithLogger(in.log), job.WithRecordInterval(in.o.recordInterval),
			job.WithFireListener(listener.FireFuncs{Ended: in.fireEnded}))
		if err != nil {
			return nil, err
		}
		for k := range max(in.o.chain, 1) {
			cfg := job.Config{Name: in.chainJob(k), Cron: in.o.cron, ShardingTotalCount: in.o.items, Failover: true, Overlap: job.OverlapPolicy(in.o.overlap),
				Jitter: in.o.fireJitter}
			if in.o.failEvery > 0 {
				cfg.Retry = job.RetryPolicy{Attempts: 2, Backoff: 50 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}
			}
			if k > 0 {
				cfg.After, cfg.AfterTimeout = in.chainJob(k-1), in.o.afterTimeout
			}
			if err := s.Add(ctx, cfg, job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
				return in.execute(ctx, sc, k)
			})); err != nil {
				return nil, err
			}
		}
		err = s.Start(ctx)
		if err == nil {
			return s, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		in.log.Warn("scheduler did not start; retrying", "err", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// fireEnded logs that a fire's items here were completed: their
// completions' writes returned.
func (in *instance) fireEnded(f listener.Fire) {
	k := 0
	for j := range max(in.o.chain, 1) {
		if in.chainJob(j) == f.Job {
			k = j
		}
	}
	items := make([]int, len(f.Items))
	for i, it := range f.Items {
		items[i] = k*in.o.items + it
	}
	in.write(eventlog.Event{Ev: eventlog.FireEnded, Fire: in.scheduled(f.FireTime), Kind: f.Kind, Items: items})
}

// chainJob is the name of the chain's job k (see -chain).
func (in *instance) chainJob(k int) string {
	if k == 0 {
		return in.o.jobName
	}
	return fmt.Sprintf("%s-%d", in.o.jobName, k+1)
}

// scheduled is a fire's time in the log (Unix ms): the schedule's time
// before the jitter, which is under a second and under half the period
// of a cron on whole seconds, so that every job of a chain logs one fire
// at one time, on the grid the analysis counts fires on.
func (in *instance) scheduled(at time.Time) int64 {
	if in.o.fireJitter > 0 {
		at = at.Truncate(time.Second)
	}
	return at.UnixMilli()
}

// errFailedAsAsked is the error of a run -fail-every makes fail.
var errFailedAsAsked = errors.New("chaos: failed as asked (-fail-every)")

// execute is the test job (job k of the chain): begin, work, check
// ownership, then end (the side effect) or abort.
func (in *instance) execute(ctx context.Context, sc job.ShardingContext, k int) error {
	seq := in.seq.Add(1)
	run := fmt.Sprintf("%s.%d.%d", in.o.id, in.pid, seq)
	base := eventlog.Event{Run: run, Item: eventlog.Item(k*in.o.items + sc.Item), Fire: in.scheduled(sc.FireTime), Through: in.scheduled(sc.Through), Kind: string(sc.Kind)}
	e := base
	e.Ev, e.Attempt = eventlog.Begin, sc.Attempt
	in.write(e)

	if in.o.failEvery > 0 && sc.Attempt == 1 && seq%int64(in.o.failEvery) == 0 {
		// Fails at once, as the owner, so that its retry comes well
		// before the next fire.
		if err := sc.StillOwner(); err != nil {
			e := base
			e.Ev, e.Err = eventlog.Abort, "still owner: "+err.Error()
			in.write(e)
			return err
		}
		e := base
		e.Ev, e.Err = eventlog.Failed, "failed as asked"
		in.write(e)
		return errFailedAsAsked
	}

	d := in.o.work
	if in.o.jitter > 0 {
		d += time.Duration(rand.Int64N(int64(2*in.o.jitter)+1)) - in.o.jitter
	}
	if in.o.longEvery > 0 && seq%int64(in.o.longEvery) == 0 {
		d = in.o.long
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		e := base
		e.Ev, e.Err = eventlog.Abort, "context: "+context.Cause(ctx).Error()
		if errors.Is(context.Cause(ctx), job.ErrReplaced) {
			e.Ev = eventlog.Replaced
		}
		in.write(e)
		return ctx.Err()
	case <-t.C:
	}
	if err := sc.StillOwner(); err != nil {
		e := base
		e.Ev, e.Err = eventlog.Abort, "still owner: "+err.Error()
		in.write(e)
		return err
	}
	e = base
	e.Ev = eventlog.End
	in.write(e)
	return nil
}
