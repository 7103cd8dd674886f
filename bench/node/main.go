// Command node is one node process of the peer benchmark (package
// github.com/shardjob/shardjob/bench): a scheduler of one of the compared
// systems running -jobs jobs named {-prefix}{0..jobs-1} on -cron, each run
// sleeping -work, so that runs are in flight when the benchmark kills a
// node.
//
// Systems:
//
//	shardjob    a job.Scheduler on its own session of ZooKeeper (-zk) or etcd (-etcd), one item per job unless -items says otherwise
//	gocron      a gocron v2 scheduler with gocron-redis-lock's locker (WithTries(1), as its README shows) on -redis
//	dcron       a dcron scheduler with its Redis driver on -redis
//	dcron-etcd  a dcron scheduler with its etcd driver on -etcd, its jobs wrapped in cron.Recover (see runDcronEtcd)
//
// Every line the process records is appended to -out with one write(2),
// unbuffered, so that what it recorded survives a SIGKILL:
//
//	S <unix ns>                                               the scheduler started
//	R <job> <item> <fire unix ms> <start unix ns> <kind> <through unix ms>   a run started
//	C <runs> <cpu ns> <mallocs> <bytes allocated> <requests> <write ops>   with -measure-for: the process's own cost over its window
//	                                                          (requests and write ops: shardjob's registry client's, 0 for the others)
//
// With -count-only a run records no line: it is counted, and the process
// measures its own CPU time (getrusage) and allocations over a window of
// -measure-for that starts -measure-after the scheduler started, and
// records them as one C line. That is the cost of the scheduler itself,
// without the recording the other benchmarks need.
//
// The fire time is the scheduled fire as shardjob reports it; gocron and
// dcron do not tell a job its scheduled time, so their lines carry -1 and
// the benchmark takes the tick from the start time. The process runs until
// SIGTERM or SIGINT, then shuts its scheduler down within -shutdown-timeout.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	redislock "github.com/go-co-op/gocron-redis-lock/v2"
	gocron "github.com/go-co-op/gocron/v2"
	redisv8 "github.com/go-redis/redis/v8"
	"github.com/libi/dcron"
	dcrondriver "github.com/libi/dcron/driver"
	"github.com/redis/go-redis/v9"
	"github.com/robfig/cron/v3"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
	_ "github.com/shardjob/shardjob/regcenter/etcd"      // -etcd: regcenter.Open serves etcd
	_ "github.com/shardjob/shardjob/regcenter/zookeeper" // -zk: and ZooKeeper
)

type options struct {
	system          string
	id              string
	zk              []string
	etcd            []string
	redis           string
	namespace       string
	prefix          string
	jobs, items     int
	cron            string
	work            time.Duration
	failover        bool
	sessionTimeout  time.Duration
	fireLead        time.Duration
	recordInterval  time.Duration
	noJournal       bool
	unmonitored     bool
	shutdownTimeout time.Duration
	out             string
	cpuProfile      string
	verbose         bool
	countOnly       bool
	measureAfter    time.Duration
	measureFor      time.Duration
}

func main() {
	var o options
	var zk, etcd string
	flag.StringVar(&o.system, "system", "shardjob", "shardjob, gocron, dcron or dcron-etcd")
	flag.StringVar(&o.id, "id", "", "node id (required; shardjob's server id)")
	flag.StringVar(&zk, "zk", "", "shardjob: ZooKeeper servers, host:port,...")
	flag.StringVar(&etcd, "etcd", "", "shardjob (instead of -zk), dcron-etcd: etcd client endpoints, host:port,...")
	flag.StringVar(&o.redis, "redis", "", "gocron, dcron: Redis address host:port")
	flag.StringVar(&o.namespace, "namespace", "bench", "shardjob's namespace; dcron's service name")
	flag.StringVar(&o.prefix, "prefix", "j", "job name prefix")
	flag.IntVar(&o.jobs, "jobs", 30, "number of jobs")
	flag.IntVar(&o.items, "items", 1, "shardjob: sharding items per job")
	flag.StringVar(&o.cron, "cron", "* * * * * *", "cron of every job, with seconds")
	flag.DurationVar(&o.work, "work", 100*time.Millisecond, "how long each run sleeps")
	flag.BoolVar(&o.failover, "failover", false, "shardjob: turn failover on")
	flag.DurationVar(&o.sessionTimeout, "session-timeout", 0, "shardjob: session timeout, on etcd the lease's TTL (0: regcenter's default, 10s)")
	flag.BoolVar(&o.unmonitored, "unmonitored", false, "shardjob: jobs with Config.Unmonitored (no running or completed marks)")
	flag.DurationVar(&o.fireLead, "fire-lead", -1, "shardjob: how long before its time a fire claims its items (negative: the SDK's default)")
	flag.DurationVar(&o.recordInterval, "record-interval", -1, "shardjob: how often at most a held item's completed record is written (job.WithRecordInterval; negative: the SDK's default)")
	flag.BoolVar(&o.noJournal, "no-journal", false, "shardjob: write every completion's record instead of the completion journal (job.WithCompletionJournal(false))")
	flag.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 5*time.Second, "deadline of the graceful shutdown")
	flag.StringVar(&o.out, "out", "", "file the node appends its lines to (required)")
	flag.BoolVar(&o.verbose, "v", false, "debug logging on stderr")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file (on a graceful stop; with -count-only, of the measured window alone)")
	flag.BoolVar(&o.countOnly, "count-only", false, "count runs instead of recording them, and record the process's own cost over the window -measure-after/-measure-for as a C line")
	flag.DurationVar(&o.measureAfter, "measure-after", 10*time.Second, "-count-only: the window starts this long after the scheduler started")
	flag.DurationVar(&o.measureFor, "measure-for", 30*time.Second, "-count-only: the window's length")
	flag.Parse()
	if o.id == "" || o.out == "" || o.jobs < 1 || o.items < 1 {
		fmt.Fprintln(os.Stderr, "node: -id and -out are required; -jobs and -items must be at least 1")
		os.Exit(2)
	}
	if o.countOnly && (o.measureAfter < 0 || o.measureFor <= 0) {
		fmt.Fprintln(os.Stderr, "node: -measure-after must not be negative, -measure-for must be positive")
		os.Exit(2)
	}
	if zk != "" {
		o.zk = strings.Split(zk, ",")
	}
	if etcd != "" {
		o.etcd = strings.Split(etcd, ",")
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "node:", err)
		os.Exit(1)
	}
}

// recorder appends lines to the node's file, one write each; with
// countOnly it only counts runs.
type recorder struct {
	mu        sync.Mutex
	f         *os.File
	countOnly bool
	// cpuProfile, with -count-only, is where the window's CPU profile
	// goes.
	cpuProfile string
	runs       atomic.Int64
	// registry is shardjob's registry client, once open: its requests
	// and write operations join the measure.
	registry atomic.Pointer[regcenter.Center]
}

func (r *recorder) line(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.f.WriteString(s); err != nil {
		// The benchmark counts runs from this file; a lost line would be
		// a lost run. Say so where the benchmark's log shows it.
		log.Printf("record %q: %v", s, err)
	}
}

// run records a run that started now for fire (zero when the system does
// not say) and sleeps for work.
func (r *recorder) run(ctx context.Context, name string, item int, fire, through time.Time, kind string, work time.Duration) {
	if r.countOnly {
		r.runs.Add(1)
		if work > 0 {
			sleepCtx(ctx, work)
		}
		return
	}
	start := time.Now().UnixNano()
	fireMS, throughMS := int64(-1), int64(-1)
	if !fire.IsZero() {
		fireMS, throughMS = fire.UnixMilli(), through.UnixMilli()
	}
	r.line("R " + name + " " + strconv.Itoa(item) + " " + strconv.FormatInt(fireMS, 10) + " " +
		strconv.FormatInt(start, 10) + " " + kind + " " + strconv.FormatInt(throughMS, 10) + "\n")
	sleepCtx(ctx, work)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// cost is the process's CPU time, allocations and runs so far.
type cost struct {
	runs, cpuNS        int64
	mallocs, allocs    uint64
	requests, writeOps int64
}

func (r *recorder) cost() (cost, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return cost{}, err
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	c := cost{runs: r.runs.Load(), cpuNS: ru.Utime.Nano() + ru.Stime.Nano(), mallocs: ms.Mallocs, allocs: ms.TotalAlloc}
	if rc := r.registry.Load(); rc != nil {
		st := (*rc).Stats()
		c.requests, c.writeOps = st.Total(), st.WriteOps
	}
	return c, nil
}

// measure records, as a C line, what the process spent over the window
// from after to after+length, counted from now; it gives up if ctx ends
// first.
func (r *recorder) measure(ctx context.Context, after, length time.Duration) {
	sleepCtx(ctx, after)
	if ctx.Err() != nil {
		return
	}
	c0, err := r.cost()
	if err != nil {
		log.Printf("measure: %v", err)
		return
	}
	if r.cpuProfile != "" {
		stop, err := startProfile(r.cpuProfile)
		if err != nil {
			log.Printf("measure: %v", err)
			return
		}
		defer stop()
	}
	sleepCtx(ctx, length)
	if ctx.Err() != nil {
		return
	}
	c1, err := r.cost()
	if err != nil {
		log.Printf("measure: %v", err)
		return
	}
	r.line(fmt.Sprintf("C %d %d %d %d %d %d\n", c1.runs-c0.runs, c1.cpuNS-c0.cpuNS, c1.mallocs-c0.mallocs, c1.allocs-c0.allocs,
		c1.requests-c0.requests, c1.writeOps-c0.writeOps))
}

// startProfile starts a CPU profile into path; stop ends it and closes
// the file.
func startProfile(path string) (stop func(), err error) {
	pf, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(pf); err != nil {
		return nil, errors.Join(err, pf.Close())
	}
	return func() {
		pprof.StopCPUProfile()
		if err := pf.Close(); err != nil {
			log.Printf("close %s: %v", path, err)
		}
	}, nil
}

func run(o options) error {
	f, err := os.OpenFile(o.out, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if err := f.Close(); err != nil {
			log.Printf("close %s: %v", o.out, err)
		}
	}()
	rec := &recorder{f: f, countOnly: o.countOnly}
	if o.cpuProfile != "" && o.countOnly {
		rec.cpuProfile = o.cpuProfile // the window's alone: see measure
	} else if o.cpuProfile != "" {
		stop, err := startProfile(o.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	level := slog.LevelWarn
	if o.verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})).With("node", o.id)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	switch o.system {
	case "shardjob":
		return runShardjob(ctx, o, rec, logger)
	case "gocron":
		return runGocron(ctx, o, rec, logger)
	case "dcron":
		return runDcron(ctx, o, rec)
	case "dcron-etcd":
		return runDcronEtcd(ctx, o, rec)
	default:
		return fmt.Errorf("unknown system %q", o.system)
	}
}

// started records that the scheduler started, and starts the window of
// -count-only's measure; stop waits for it.
func (r *recorder) started(ctx context.Context, o options) (stop func()) {
	r.line("S " + strconv.FormatInt(time.Now().UnixNano(), 10) + "\n")
	if !o.countOnly {
		return func() {}
	}
	done := make(chan struct{})
	go func() { // owned by the returned stop, which waits for it
		defer close(done)
		r.measure(ctx, o.measureAfter, o.measureFor)
	}()
	return func() { <-done }
}

func runShardjob(ctx context.Context, o options, rec *recorder, logger *slog.Logger) error {
	if (len(o.zk) == 0) == (len(o.etcd) == 0) {
		return errors.New("shardjob needs -zk or -etcd, not both")
	}
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	// regcenter.Open picks the backend by which field is set, as a user's
	// program does.
	rc, err := regcenter.Open(cctx, regcenter.Config{Servers: o.zk, Etcd: o.etcd, Namespace: o.namespace, SessionTimeout: o.sessionTimeout}, regcenter.WithLogger(logger))
	if err != nil {
		return err
	}
	defer func() {
		if err := rc.Close(); err != nil {
			logger.Warn("close the registry session", "err", err)
		}
	}()
	rec.registry.Store(&rc)
	opts := []job.Option{job.WithServerID(o.id), job.WithLogger(logger)}
	if o.fireLead >= 0 {
		opts = append(opts, job.WithFireLead(o.fireLead))
	}
	if o.noJournal {
		opts = append(opts, job.WithCompletionJournal(false))
	}
	if o.recordInterval >= 0 {
		opts = append(opts, job.WithRecordInterval(o.recordInterval))
	}
	s, err := job.NewScheduler(rc, opts...)
	if err != nil {
		return err
	}
	execute := job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
		rec.run(ctx, sc.JobName, sc.Item, sc.FireTime, sc.Through, string(sc.Kind), o.work)
		return nil
	})
	for i := range o.jobs {
		cfg := job.Config{Name: o.prefix + strconv.Itoa(i), Cron: o.cron, ShardingTotalCount: o.items, Failover: o.failover, Unmonitored: o.unmonitored}
		if err := s.Add(cctx, cfg, execute); err != nil {
			return err
		}
	}
	if err := s.Start(cctx); err != nil {
		return err
	}
	defer rec.started(ctx, o)()
	<-ctx.Done()
	sctx, scancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
	defer scancel()
	return s.Shutdown(sctx)
}

func runGocron(ctx context.Context, o options, rec *recorder, logger *slog.Logger) error {
	if o.redis == "" {
		return errors.New("gocron needs -redis")
	}
	rdb := redis.NewClient(&redis.Options{Addr: o.redis})
	defer func() {
		if err := rdb.Close(); err != nil {
			logger.Warn("close the Redis client", "err", err)
		}
	}()
	// As gocron-redis-lock's README shows it: one try, so that the nodes
	// that lose the race for a run skip it instead of retrying.
	locker, err := redislock.NewRedisLocker(rdb, redislock.WithTries(1))
	if err != nil {
		return err
	}
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(locker), gocron.WithLogger(gocronLogger{logger}))
	if err != nil {
		return err
	}
	for i := range o.jobs {
		name := o.prefix + strconv.Itoa(i)
		task := gocron.NewTask(func(ctx context.Context) {
			rec.run(ctx, name, 0, time.Time{}, time.Time{}, "fire", o.work)
		})
		if _, err := s.NewJob(gocron.CronJob(o.cron, true), task, gocron.WithName(name)); err != nil {
			return errors.Join(err, s.Shutdown())
		}
	}
	s.Start()
	defer rec.started(ctx, o)()
	<-ctx.Done()
	// Shutdown has no deadline of its own; past ours the process exits,
	// which ends this goroutine with it.
	done := make(chan error, 1)
	go func() { done <- s.Shutdown() }()
	t := time.NewTimer(o.shutdownTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return fmt.Errorf("gocron shutdown took over %v", o.shutdownTimeout)
	}
}

// gocronLogger passes gocron's warnings and errors to slog.
type gocronLogger struct{ l *slog.Logger }

func (g gocronLogger) Debug(string, ...any)         {}
func (g gocronLogger) Info(string, ...any)          {}
func (g gocronLogger) Warn(msg string, args ...any) { g.l.Warn("gocron: "+msg, args...) }
func (g gocronLogger) Error(msg string, args ...any) {
	g.l.Error("gocron: "+msg, args...)
}

func runDcron(ctx context.Context, o options, rec *recorder) error {
	if o.redis == "" {
		return errors.New("dcron needs -redis")
	}
	rdb := redisv8.NewClient(&redisv8.Options{Addr: o.redis})
	defer func() {
		if err := rdb.Close(); err != nil {
			log.Printf("close the Redis client: %v", err)
		}
	}()
	return runDcronWith(ctx, o, rec, dcrondriver.NewRedisDriver(rdb))
}

func runDcronEtcd(ctx context.Context, o options, rec *recorder) error {
	if len(o.etcd) == 0 {
		return errors.New("dcron-etcd needs -etcd")
	}
	// The client as dcron's README and examples make it: endpoints and a
	// dial timeout, nothing else.
	cli, err := clientv3.New(clientv3.Config{Endpoints: o.etcd, DialTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer func() {
		if err := cli.Close(); err != nil {
			log.Printf("close the etcd client: %v", err)
		}
	}()
	// The etcd driver registers the node from a goroutine of its own, so
	// the node list dcron reads at Start may not hold the node yet; an
	// empty list leaves dcron's hash ring nil until the next refresh (3 s),
	// and a job that fires before it dereferences the nil ring and panics
	// in cron's goroutine, ending the process. cron.Recover, robfig/cron's
	// own wrapper, turns those first fires into logged, skipped runs.
	recov := dcron.CronOptionChain(cron.Recover(cron.PrintfLogger(log.Default())))
	return runDcronWith(ctx, o, rec, dcrondriver.NewEtcdDriver(cli), recov)
}

// runDcronWith runs the jobs on a dcron scheduler with driver drv and
// the options extra until ctx ends.
func runDcronWith(ctx context.Context, o options, rec *recorder, drv dcrondriver.DriverV2, extra ...dcron.Option) error {
	d := dcron.NewDcronWithOption(o.namespace, drv, append([]dcron.Option{dcron.CronOptionSeconds()}, extra...)...)
	for i := range o.jobs {
		name := o.prefix + strconv.Itoa(i)
		// dcron gives a job no context; a run's sleep ends with the
		// process's.
		if err := d.AddFunc(name, o.cron, func() {
			rec.run(ctx, name, 0, time.Time{}, time.Time{}, "fire", o.work)
		}); err != nil {
			return err
		}
	}
	d.Start()
	defer rec.started(ctx, o)()
	<-ctx.Done()
	// Stop has no deadline of its own; past ours the process exits, which
	// ends this goroutine with it.
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Stop()
	}()
	t := time.NewTimer(o.shutdownTimeout)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
		return fmt.Errorf("dcron stop took over %v", o.shutdownTimeout)
	}
}
