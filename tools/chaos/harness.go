package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/tools/chaos/eventlog"
	"github.com/shardjob/shardjob/tools/proc"
)

const (
	instancePkg = "github.com/shardjob/shardjob/tools/chaos/instance"
	namespace   = "chaos"
	jobName     = "chaos"
	ensemble    = 3
)

// Config is a chaos run.
type Config struct {
	Registry  string        // "zookeeper" or "etcd": the cluster the instances coordinate through
	Duration  time.Duration // how long faults are injected (the first round of every kind always completes)
	Instances int
	Items     int
	Work      time.Duration // an execution's length
	Jitter    time.Duration // ± on Work
	// RecordInterval is the instances' job.WithRecordInterval: the runs a
	// crash can make run again are those of this long before it.
	RecordInterval  time.Duration
	SessionTimeout  time.Duration
	ShutdownTimeout time.Duration // an instance's graceful shutdown deadline
	Seed            int64
	Race            bool          // build the instance with -race
	Partition       bool          // run the partition fault (needs root and ip netns)
	Faults          []string      // nil: every fault of the registry
	Warmup          time.Duration // fires not checked after all instances are up
	Settle          time.Duration // quiet time after the last fault, before stopping
	Cooldown        time.Duration // fires not checked before the stop
	Dir             string        // run directory; "" makes a temporary one
	Keep            bool          // keep the run directory even when the run passes
	InstanceBin     string        // a prebuilt instance binary; "" builds one
	Verbose         bool
	// Overlap is the test job's overlap policy: "" (buffer one run) or
	// "replace", where every LongEvery-th execution of an instance works
	// Long, past the next fire, which replaces it.
	Overlap   string
	LongEvery int
	Long      time.Duration
	// FailEvery makes every this many executions of an instance fail at
	// their first attempt (after StillOwner passed), and the jobs retry a
	// failed run twice (job.Config.Retry): the retries are checked as
	// the fire's next tries. 0: none.
	FailEvery int
	// Backfill starts, a quarter into the faults, a backfill of the first
	// job over the last 30 fires before it (shardjob backfill), and
	// waits for it before the stop: the analysis checks that it ran each
	// fire once on every item, beside the live schedule, never beside
	// another run of the item.
	Backfill bool
	// Chain is how many jobs the instances run, each after the one before
	// (1: one job); the analysis checks each job's invariants and that
	// every run of a dependent began after its parent completed its fires.
	Chain int
	// FireJitter is the schedule's jitter of every job the instances run
	// (job.Config.Jitter): each fire delayed by up to this much, a delay of
	// its own per job, so that a chain's dependent and its parent fire at
	// different times and their fires are matched by the schedule's time
	// before jitter. Below half the one-second period. Negative: the
	// default, DefaultChainJitter for a chain (Chain > 1), none for one job.
	FireJitter time.Duration
	Out        io.Writer // progress lines; nil discards them
}

// DefaultChainJitter is a chain's FireJitter by default.
const DefaultChainJitter = 300 * time.Millisecond

// fireJitter is the jobs' schedule jitter: FireJitter, or its default.
func (c Config) fireJitter() time.Duration {
	switch {
	case c.FireJitter >= 0:
		return c.FireJitter
	case c.Chain > 1:
		return DefaultChainJitter
	}
	return 0
}

// DefaultConfig returns the defaults of the command's flags.
func DefaultConfig() Config {
	return Config{
		Registry:        registryZooKeeper,
		Duration:        60 * time.Second,
		Instances:       3,
		Items:           6,
		Work:            1500 * time.Millisecond,
		Jitter:          200 * time.Millisecond,
		RecordInterval:  job.DefaultRecordInterval,
		SessionTimeout:  4 * time.Second,
		ShutdownTimeout: 5 * time.Second,
		Seed:            time.Now().UnixNano(),
		Race:            raceEnabled,
		Partition:       true,
		Warmup:          3 * time.Second,
		Settle:          8 * time.Second,
		Cooldown:        4 * time.Second,
		FireJitter:      -1,
	}
}

func (c Config) validate() error {
	var errs []error
	if !slices.Contains(registries, c.Registry) {
		errs = append(errs, fmt.Errorf("registry %q: need one of %s", c.Registry, strings.Join(registries, ",")))
	}
	if c.RecordInterval < 0 || c.RecordInterval > 10*time.Minute {
		errs = append(errs, fmt.Errorf("record interval %v: need 0 to 10m (job.WithRecordInterval)", c.RecordInterval))
	}
	if c.Instances < 2 {
		errs = append(errs, fmt.Errorf("instances %d: need at least 2 (failover needs a survivor)", c.Instances))
	}
	if c.Items < 1 {
		errs = append(errs, fmt.Errorf("items %d: need at least 1", c.Items))
	}
	if c.Chain < 0 || c.Chain > 5 {
		errs = append(errs, fmt.Errorf("chain %d: need 0..5 jobs", c.Chain))
	}
	if j := c.fireJitter(); j >= 500*time.Millisecond {
		errs = append(errs, fmt.Errorf("fire jitter %v: need less than half the one-second period", j))
	}
	switch c.Overlap {
	case "", "replace":
	default:
		errs = append(errs, fmt.Errorf("overlap %q: need \"\" or replace", c.Overlap))
	}
	if c.FailEvery < 0 {
		errs = append(errs, fmt.Errorf("fail-every %d: need a count >= 0", c.FailEvery))
	}
	if c.LongEvery < 0 || (c.LongEvery > 0 && c.Long <= c.Work) {
		errs = append(errs, fmt.Errorf("long-every %d, long %v: need a count >= 0 and a long run longer than -work", c.LongEvery, c.Long))
	}
	if c.Work <= 0 || c.Jitter < 0 || c.Jitter >= c.Work {
		errs = append(errs, fmt.Errorf("work %v ± %v: need 0 <= jitter < work", c.Work, c.Jitter))
	}
	if c.SessionTimeout < time.Second || c.SessionTimeout > 4*time.Second {
		errs = append(errs, fmt.Errorf("session timeout %v: need 1s..4s (the test ZooKeeper ensemble's tick allows up to 4s; etcd runs keep the same range so that their figures compare)", c.SessionTimeout))
	}
	if c.ShutdownTimeout <= 0 || c.Duration < 0 || c.Warmup < 0 || c.Settle < 0 || c.Cooldown < 0 {
		errs = append(errs, errors.New("durations must not be negative"))
	}
	for _, f := range c.Faults {
		if !isFault(c.Registry, f) {
			errs = append(errs, fmt.Errorf("unknown fault %q on %s (have %s)", f, c.Registry, strings.Join(faultsFor(c.Registry), ",")))
		}
	}
	return errors.Join(errs...)
}

// harness is one run.
type harness struct {
	cfg         Config
	dir         string
	logPath     string
	instanceBin string
	rng         *rand.Rand // the fault loop's only

	log     *eventlog.Writer
	cluster cluster
	servers []string // the registry's members, for instances on the host

	netns     *netns
	fwd       *forwarder
	nsServers []string // the members through the forwarder, for the instance in the namespace

	rc      regcenter.Center
	watcher *statusWatcher
	procs   []*instance

	memberMu   sync.Mutex
	memberDown map[int]bool // members this harness stopped and has not restarted

	outMu sync.Mutex
	out   io.Writer
}

func (h *harness) progress(format string, args ...any) {
	h.outMu.Lock()
	defer h.outMu.Unlock()
	fmt.Fprintf(h.out, "chaos: %s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func (h *harness) event(e eventlog.Event) {
	if err := h.log.Write(e); err != nil {
		h.progress("cannot write the event log: %v", err)
	}
}

func (h *harness) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	h.progress("%s", msg)
	h.event(eventlog.Event{Ev: eventlog.Note, Detail: msg})
}

// Run runs the harness: ensemble, instances, faults, then the analysis of
// the log. The report is returned even when it shows violations; the error
// is for runs that could not be carried out.
func Run(ctx context.Context, cfg Config) (rep *Report, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	out := cfg.Out
	if out == nil {
		out = io.Discard
	}
	if cfg.Faults == nil {
		cfg.Faults = faultsFor(cfg.Registry)
	}
	if cfg.Chain > 1 {
		// Each job of a chain runs after the one before: the last lags
		// the first by about a run per job, and its last fires are
		// checked only once it has had the time to run them.
		lag := time.Duration(cfg.Chain) * (cfg.Work + cfg.Jitter + cfg.fireJitter() + time.Second)
		cfg.Cooldown, cfg.Settle = max(cfg.Cooldown, lag), max(cfg.Settle, lag)
	}
	reg := shortName(cfg.Registry)
	h := &harness{cfg: cfg, out: out, memberDown: map[int]bool{}, rng: rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(cfg.Seed)>>1|1))}
	h.progress("seed=%d registry=%s", cfg.Seed, cfg.Registry)

	h.dir = cfg.Dir
	if h.dir == "" {
		if h.dir, err = os.MkdirTemp("", "shardjob-chaos-"); err != nil {
			return nil, err
		}
		// Runs after the undo below: a passing run leaves nothing behind.
		defer func() {
			if err != nil || rep == nil || !rep.OK() || cfg.Keep {
				h.progress("run directory kept: %s", h.dir)
				return
			}
			os.RemoveAll(h.dir)
		}()
	} else if err := os.MkdirAll(h.dir, 0o755); err != nil {
		return nil, err
	}
	// Everything started is undone in reverse order, however Run ends.
	var undo []func()
	defer func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}()

	h.logPath = filepath.Join(h.dir, "events.jsonl")
	h.progress("run directory %s, event log %s", h.dir, h.logPath)

	if h.instanceBin = cfg.InstanceBin; h.instanceBin == "" {
		t0 := time.Now()
		if h.instanceBin, err = buildInstance(ctx, h.dir, cfg.Race); err != nil {
			return nil, err
		}
		h.progress("built %s (race=%v) in %v", h.instanceBin, cfg.Race, time.Since(t0).Round(time.Millisecond))
	}

	clusterLog, err := os.OpenFile(filepath.Join(h.dir, reg+"-cluster.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	undo = append(undo, func() { clusterLog.Close() })
	t0 := time.Now()
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	h.cluster, err = startRegistry(sctx, cfg.Registry, filepath.Join(h.dir, reg), ensemble,
		slog.New(slog.NewTextHandler(clusterLog, &slog.HandlerOptions{Level: slog.LevelInfo})))
	cancel()
	if err != nil {
		return nil, fmt.Errorf("%s cluster: %w", cfg.Registry, err)
	}
	undo = append(undo, func() {
		if err := h.cluster.close(); err != nil {
			h.progress("closing the %s cluster: %v", cfg.Registry, err)
		}
	})
	h.servers = h.cluster.addrs()
	h.progress("%s cluster of %d serving on %s (started in %v)", cfg.Registry, ensemble, strings.Join(h.servers, ","), time.Since(t0).Round(time.Millisecond))

	if h.log, err = eventlog.Open(h.logPath); err != nil {
		return nil, err
	}
	undo = append(undo, func() { h.log.Close() })

	if cfg.Partition && hasFault(cfg.Faults, faultPartition) {
		removeStaleNetns(ctx, h.progress)
		n, err := setupNetns(ctx)
		if err != nil {
			h.progress("partition fault skipped: cannot set up a network namespace: %v", err)
		} else {
			undo = append(undo, n.teardown)
			fwd, addrs, err := startForwarder(n.HostIP, h.servers)
			if err != nil {
				h.progress("partition fault skipped: forwarder: %v", err)
			} else {
				undo = append(undo, fwd.close)
				h.netns, h.fwd, h.nsServers = n, fwd, addrs
				h.progress("network namespace %s (%s, %s ↔ %s), %s forwarded on %s", n.Name, n.HostIf, n.HostIP, n.NsIP, cfg.Registry, strings.Join(addrs, ","))
			}
		}
	}

	ids := make([]string, cfg.Instances)
	for i := range ids {
		ids[i] = fmt.Sprintf("i%d", i+1)
		// The last instance lives in the namespace, if there is one.
		h.procs = append(h.procs, &instance{id: ids[i], inNetns: h.netns != nil && i == cfg.Instances-1})
	}
	recordMS := cfg.RecordInterval.Milliseconds()
	h.event(eventlog.Event{Ev: eventlog.Config, Cfg: &eventlog.RunConfig{
		Seed: cfg.Seed, Instances: cfg.Instances, InstanceIDs: ids, Items: cfg.Items * max(cfg.Chain, 1), PeriodMS: 1000,
		WorkMS: cfg.Work.Milliseconds(), SessionTimeoutMS: cfg.SessionTimeout.Milliseconds(),
		WarmupMS: cfg.Warmup.Milliseconds(), CooldownMS: cfg.Cooldown.Milliseconds(),
		DurationMS: cfg.Duration.Milliseconds(), Partition: h.netns != nil, Registry: cfg.Registry,
		Overlap: cfg.Overlap, Chain: cfg.Chain, JobItems: cfg.Items, RecordIntervalMS: &recordMS,
		FireJitterMS: cfg.fireJitter().Milliseconds(), FailEvery: cfg.FailEvery,
	}})

	rcLog, err := os.OpenFile(filepath.Join(h.dir, "harness-"+reg+".log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	undo = append(undo, func() { rcLog.Close() })
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	h.rc, err = regcenter.Open(cctx, h.cluster.config(h.servers, cfg.SessionTimeout),
		regcenter.WithLogger(slog.New(slog.NewTextHandler(rcLog, &slog.HandlerOptions{Level: slog.LevelInfo}))))
	cancel()
	if err != nil {
		return nil, fmt.Errorf("harness connection to %s: %w", cfg.Registry, err)
	}
	undo = append(undo, func() { h.rc.Close() })
	h.watcher = newStatusWatcher(h.rc, jobName, ids, h.event)
	undo = append(undo, h.watcher.close)

	undo = append(undo, func() { // on any early return: no instance survives
		var wg sync.WaitGroup
		for _, p := range h.procs {
			wg.Add(1)
			go func() { defer wg.Done(); h.kill(p) }()
		}
		wg.Wait()
	})
	for _, p := range h.procs {
		if err := h.start(p); err != nil {
			return nil, err
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	err = h.waitRecovered(rctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("instances did not come up: %w", err)
	}
	h.event(eventlog.Event{Ev: eventlog.MeasureStart})
	h.progress("all %d instances up; injecting faults for %v", cfg.Instances, cfg.Duration)

	var backfillDone chan struct{}
	if cfg.Backfill {
		backfillDone = make(chan struct{})
		bctx, cancel := context.WithCancel(ctx)
		done := backfillDone
		undo = append(undo, func() { cancel(); <-done })
		go func() { // owned here: waited for below, or ended and waited for by undo
			defer close(backfillDone)
			h.runBackfill(bctx, time.Now())
		}()
	}
	if err := h.faultLoop(ctx); err != nil {
		return nil, err
	}
	h.progress("faults over; settling for %v", cfg.Settle)
	if err := sleepCtx(ctx, cfg.Settle); err != nil {
		return nil, err
	}
	if backfillDone != nil {
		select {
		case <-backfillDone:
		case <-time.After(backfillWait):
			h.progress("the backfill is not through %v after the settle", backfillWait)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	h.event(eventlog.Event{Ev: eventlog.MeasureStop})
	h.dump(reg + "-tree-end.txt")
	h.progress("stopping the instances (SIGTERM)")
	var wg sync.WaitGroup
	for _, p := range h.procs {
		wg.Add(1)
		go func() { defer wg.Done(); h.terminate(p) }()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// Undo now (the log must be complete and closed), then analyse.
	for i := len(undo) - 1; i >= 0; i-- {
		undo[i]()
	}
	undo = nil
	events, bad, err := eventlog.ReadFile(h.logPath)
	if err != nil {
		return nil, err
	}
	rep, err = Analyse(events, AnalyseOptions{})
	if err != nil {
		return nil, err
	}
	rep.BadLines += bad
	return rep, nil
}

// buildInstance builds the instance program into dir.
func buildInstance(ctx context.Context, dir string, race bool) (string, error) {
	var flags []string
	if race {
		flags = append(flags, "-race")
	}
	return proc.BuildProgram(ctx, instancePkg, dir, "instance", flags...)
}

// waitRecovered waits until every registry member serves and every
// instance runs, is ready and has its status node.
func (h *harness) waitRecovered(ctx context.Context) error {
	h.memberMu.Lock()
	var down []int
	for i := range h.memberDown {
		down = append(down, i)
	}
	h.memberMu.Unlock()
	for _, i := range down {
		if err := h.startMember(ctx, i); err != nil {
			return err
		}
	}
	if err := h.cluster.waitServing(ctx); err != nil {
		return fmt.Errorf("%s cluster not serving: %w", h.cfg.Registry, err)
	}
	ids := make([]string, 0, len(h.procs))
	for _, p := range h.procs {
		ids = append(ids, p.id)
		if _, _, _, frozen := p.state(); frozen {
			if err := h.signal(p, syscall.SIGCONT); err != nil {
				return err
			}
		}
		if !p.alive() {
			h.progress("%s is not running; starting it", p.id)
			if err := h.start(p); err != nil {
				return err
			}
		}
		if err := waitReady(ctx, p); err != nil {
			return err
		}
	}
	if err := h.watcher.waitPresent(ctx, ids); err != nil {
		return err
	}
	// The watcher's view may lag behind (its own session suffers registry
	// faults too): read every status node fresh.
	for {
		missing := ""
		for _, id := range ids {
			ok, _, err := h.rc.Exists(ctx, statusPath(jobName, id))
			if err != nil {
				missing = id + " (" + err.Error() + ")"
				break
			}
			if !ok {
				missing = id
				break
			}
		}
		if missing == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("status node of %s missing: %w", missing, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (h *harness) startMember(ctx context.Context, i int) error {
	t0 := time.Now()
	if err := h.cluster.startMember(ctx, i); err != nil {
		return fmt.Errorf("start %s member %d: %w", h.cfg.Registry, i, err)
	}
	h.memberMu.Lock()
	delete(h.memberDown, i)
	h.memberMu.Unlock()
	h.progress("%s member %d serving again (start took %v)", h.cfg.Registry, i, time.Since(t0).Round(time.Millisecond))
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// dump writes the job's subtree in the registry to a file of the run
// directory.
func (h *harness) dump(name string) {
	f, err := os.Create(filepath.Join(h.dir, name))
	if err != nil {
		h.progress("dump: %v", err)
		return
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := dumpTree(ctx, h.rc, "/"+jobName, f); err != nil {
		h.progress("dump: %v", err)
	}
}
