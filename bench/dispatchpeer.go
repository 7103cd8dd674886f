package main

// The dispatcher beside River (-dispatch): both on one PostgreSQL server
// that the benchmark starts (internal/testing/pgtest), in this process,
// one system after the other, each in a database of its own.
//
// For each system and cap setting:
//
//   - insert: N tasks due now, in batches of 1,000 (one call each, the
//     tenants in turn), nothing running (dispatch.Assign; River's
//     InsertManyFast, its bulk COPY path);
//   - run: the nodes start and run the N tasks with a handler that returns
//     at once; the run ends when the database holds none of them live
//     (dispatch: finished; River: completed);
//   - latency: a feed of R tasks a second (every 10 ms one call of R/100
//     tasks, the tenants in turn), each due when it is inserted, for D;
//     start latency is from the moment before the insert call to
//     the handler's start.
//
// CPU is the benchmark process's (getrusage: both systems' client code,
// one at a time) and the PostgreSQL server's (the postmaster and its
// backends, from /proc), each per 1,000 tasks.
//
// Caps: "open" is three tenants with caps of 1,000 and a global cap of
// 3,000 (River: three queues of MaxWorkers 1,000); "capped" is caps of 5, 10
// and 20 and a global cap of 30 (River: MaxWorkers 5, 10 and 20, and no
// global cap, which River does not have). What is not equivalent: the
// dispatcher's caps are counters in the database, held cluster-wide across
// every node and freed by the finish's commit; River's MaxWorkers is a
// number of goroutines per client process (N clients run N times as many),
// and a slot is free again when Work returns, its completion written later
// in a batch.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/shardjob/shardjob/dispatch"
	"github.com/shardjob/shardjob/internal/testing/pgtest"
	_ "github.com/shardjob/shardjob/store/postgres"
	"github.com/shardjob/shardjob/tools/benchkit"
)

// dpCaps is one cap setting: a cap per tenant (queue) and a global cap.
type dpCaps struct {
	name   string
	caps   []int
	global int
}

var dpCapSets = map[string]dpCaps{
	"open":   {"open", []int{1000, 1000, 1000}, 3000},
	"capped": {"capped", []int{5, 10, 20}, 30},
}

// dpSystems are the systems -dp-systems may name.
var dpSystems = []string{"shardjob", "river"}

// dpParams are the -dispatch flags.
type dpParams struct {
	systems  []string
	capSets  []string
	tasks    int
	rate     int
	duration time.Duration
	nodes    int
}

// parseList reads a comma-separated list of names from known, each once.
func parseList(flag, list string, known []string) ([]string, error) {
	var out []string
	for s := range strings.SplitSeq(list, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(known, s) {
			return nil, fmt.Errorf("%s: unknown name %q (known: %s)", flag, s, strings.Join(known, ", "))
		}
		if slices.Contains(out, s) {
			return nil, fmt.Errorf("%s: %q named twice", flag, s)
		}
		out = append(out, s)
	}
	return out, nil
}

func (p dpParams) validate() error {
	switch {
	case p.tasks < 1000:
		return errors.New("-dp-tasks must be at least 1000")
	case p.rate < 100:
		return errors.New("-dp-rate must be at least 100")
	case p.duration < time.Second:
		return errors.New("-dp-duration must be at least 1s")
	case p.nodes < 1 || p.nodes > 16:
		return errors.New("-dp-nodes must be from 1 to 16")
	}
	return nil
}

// dpSystem is one system under measurement, set up on its own database.
type dpSystem interface {
	// insert adds n tasks due now in batches of at most 1,000, one call
	// each, batch j to tenant (queue) first+j, stamped with the insert
	// time in ns.
	insert(ctx context.Context, n, first int, prefix string) error
	// start starts every node; each handler start is reported to started.
	start(ctx context.Context) error
	// live counts the tasks not yet ended in the database.
	live(ctx context.Context) (int, error)
	close(ctx context.Context) error
}

// dpStarts collects the handler starts: how many, and the latency of
// each from its stamp while recording is on.
type dpStarts struct {
	n         atomic.Int64
	recording atomic.Bool
	mu        sync.Mutex
	lat       []float64 // ms
}

func (s *dpStarts) started(stampNs int64) {
	s.n.Add(1)
	if s.recording.Load() {
		l := float64(time.Now().UnixNano()-stampNs) / 1e6
		s.mu.Lock()
		s.lat = append(s.lat, l)
		s.mu.Unlock()
	}
}

// cpuSample is the CPU used so far by this process and by PostgreSQL.
type cpuSample struct{ self, pg time.Duration }

func selfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// parseStatCPU returns utime+stime and cutime+cstime (the reaped
// children's) from /proc/PID/stat, in clock ticks, and the parent's pid.
func parseStatCPU(stat string) (own, children int64, ppid int, err error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, 0, fmt.Errorf("malformed stat %q", stat)
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state), f[1] the ppid; utime..cstime are fields 14..17.
	if len(f) < 15 {
		return 0, 0, 0, fmt.Errorf("short stat %q", stat)
	}
	var v [4]int64
	for k := range v {
		if v[k], err = strconv.ParseInt(f[11+k], 10, 64); err != nil {
			return 0, 0, 0, fmt.Errorf("stat field %d: %w", 14+k, err)
		}
	}
	if ppid, err = strconv.Atoi(f[1]); err != nil {
		return 0, 0, 0, fmt.Errorf("stat ppid: %w", err)
	}
	return v[0] + v[1], v[2] + v[3], ppid, nil
}

// serverCPU is the CPU of a server process and of its children, the
// living ones and those it reaped: for PostgreSQL the postmaster and its
// backends.
func serverCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	own, reaped, _, err := parseStatCPU(string(data))
	if err != nil {
		return 0, err
	}
	ticks := own + reaped
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		c, _, ppid, err := parseStatCPU(string(data))
		if err == nil && ppid == pid {
			ticks += c
		}
	}
	return time.Duration(ticks) * time.Second / benchkit.ClockTicks, nil
}

// postmasterPID reads the server's pid from its data directory.
func postmasterPID(srv *pgtest.Server) (int, error) {
	data, err := os.ReadFile(filepath.Join(srv.Dir, "data", "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	return strconv.Atoi(strings.TrimSpace(line))
}

func (b *bench) cpu(pgPID int) (cpuSample, error) {
	self, err := selfCPU()
	if err != nil {
		return cpuSample{}, err
	}
	pg, err := serverCPU(pgPID)
	return cpuSample{self: self, pg: pg}, err
}

// perK is CPU per 1,000 tasks, in ms.
func perK(d time.Duration, n int) float64 {
	return float64(d.Microseconds()) / 1000 / float64(n) * 1000
}

// measureDispatchPeer runs every system under every cap setting on one
// PostgreSQL server.
func (b *bench) measureDispatchPeer(ctx context.Context) error {
	p := b.cfg.dp
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	srv, err := pgtest.Start(sctx)
	cancel()
	if err != nil {
		return err
	}
	defer func() {
		if err := srv.Close(); err != nil {
			b.log.Warn("stop PostgreSQL", "err", err)
		}
	}()
	pgPID, err := postmasterPID(srv)
	if err != nil {
		return fmt.Errorf("PostgreSQL's pid: %w", err)
	}
	fmt.Println("bench postgres" + new(benchkit.KV).Add("port", srv.Port).Add("pid", pgPID).String())
	var errs []error
	for _, cs := range p.capSets {
		for _, sys := range p.systems {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err := b.dispatchPeerRun(ctx, srv, pgPID, sys, dpCapSets[cs]); err != nil {
				fmt.Println("bench dispatch" + new(benchkit.KV).Add("system", sys).Add("caps", cs).Add("error", err.Error()).String())
				errs = append(errs, fmt.Errorf("%s %s: %w", sys, cs, err))
			}
		}
	}
	return errors.Join(errs...)
}

// dispatchPeerRun makes the insert, run and latency measurements of one
// system under one cap setting, on a fresh database.
func (b *bench) dispatchPeerRun(ctx context.Context, srv *pgtest.Server, pgPID int, system string, caps dpCaps) error {
	p := b.cfg.dp
	dsn, err := srv.NewDatabase(ctx)
	if err != nil {
		return err
	}
	starts := &dpStarts{}
	var sys dpSystem
	switch system {
	case "shardjob":
		sys, err = newDispatchSystem(ctx, dsn, p.nodes, caps, starts)
	case "river":
		sys, err = newRiverSystem(ctx, dsn, p.nodes, caps, starts)
	default:
		err = fmt.Errorf("unknown system %q", system)
	}
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := sys.close(cctx); err != nil {
			b.log.Warn("close", "system", system, "err", err)
		}
	}()
	kv := new(benchkit.KV).Add("system", system).Add("caps", caps.name).Add("nodes", p.nodes).Add("tasks", p.tasks)

	// Insert.
	c0, err := b.cpu(pgPID)
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := sys.insert(ctx, p.tasks, 0, "bulk"); err != nil {
		return fmt.Errorf("insert: %w", err)
	}
	insertTook := time.Since(t0)
	c1, err := b.cpu(pgPID)
	if err != nil {
		return err
	}
	kv.Add("insert_per_sec", float64(p.tasks)/insertTook.Seconds()).
		Add("insert_cpu_ms_per_1k", perK(c1.self-c0.self, p.tasks)).Add("insert_pg_cpu_ms_per_1k", perK(c1.pg-c0.pg, p.tasks))

	// Run the backlog.
	t1 := time.Now()
	if err := sys.start(ctx); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	if err := waitDrained(ctx, sys, starts, int64(p.tasks), 5*time.Minute); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	runTook := time.Since(t1)
	c2, err := b.cpu(pgPID)
	if err != nil {
		return err
	}
	if n := starts.n.Load(); n < int64(p.tasks) {
		return fmt.Errorf("run: %d of %d tasks started", n, p.tasks)
	}
	kv.Add("run_per_sec", float64(p.tasks)/runTook.Seconds()).
		Add("run_cpu_ms_per_1k", perK(c2.self-c1.self, p.tasks)).Add("run_pg_cpu_ms_per_1k", perK(c2.pg-c1.pg, p.tasks))

	// Latency under a steady feed.
	starts.recording.Store(true)
	per := max(p.rate/100, 1)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	end := time.Now().Add(p.duration)
	sent := 0
	for i := 0; time.Now().Before(end); i++ {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		if err := sys.insert(ctx, per, i, fmt.Sprintf("feed%d", i)); err != nil {
			return fmt.Errorf("feed: %w", err)
		}
		sent += per
	}
	if err := waitDrained(ctx, sys, starts, int64(p.tasks+sent), time.Minute); err != nil {
		return fmt.Errorf("latency: %w", err)
	}
	starts.recording.Store(false)
	starts.mu.Lock()
	lat := slices.Clone(starts.lat)
	starts.mu.Unlock()
	kv.Add("feed_per_sec", p.rate).Add("feed_tasks", sent).Add("feed_started", len(lat)).
		Add("start_p50_ms", benchkit.MS(benchkit.Percentile(lat, 50))).Add("start_p99_ms", benchkit.MS(benchkit.Percentile(lat, 99)))
	u, err := tupleUpdates(ctx, dsn, dpTaskTable[system])
	if err != nil {
		return err
	}
	kv.Add("tup_upd", u.upd).Add("tup_hot_upd", u.hot)
	fmt.Println("bench dispatch" + kv.String())
	pre := "dispatch_" + system + "_" + caps.name + "_"
	b.summary.Add(pre+"run_per_sec", float64(p.tasks)/runTook.Seconds()).Add(pre+"start_p99_ms", benchkit.MS(benchkit.Percentile(lat, 99)))
	return nil
}

// waitDrained waits, at most limit, until the handlers have started
// target tasks in all, then until the system holds no live task. The
// first wait is in this process: counting a backlog's live tasks in the
// database every few milliseconds while it runs costs PostgreSQL a
// backend's worth of CPU (a count over the dispatcher's 100,000 waiting
// tasks takes tens of milliseconds), which the run's CPU per task would
// charge to the system measured. The count runs only for the last
// completions, after every task started, for either system alike.
func waitDrained(ctx context.Context, sys dpSystem, starts *dpStarts, target int64, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for starts.n.Load() < target {
		if err := benchkit.SleepCtx(ctx, 5*time.Millisecond); err != nil {
			return fmt.Errorf("%d of %d tasks started after %v", starts.n.Load(), target, limit)
		}
	}
	for {
		n, err := sys.live(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if err := benchkit.SleepCtx(ctx, 10*time.Millisecond); err != nil {
			return fmt.Errorf("%d tasks still live after %v", n, limit)
		}
	}
}

// dpTaskTable names each system's table of tasks.
var dpTaskTable = map[string]string{"shardjob": "dispatch_tasks", "river": "river_job"}

// tupleCounts are a table's row updates so far, all and HOT, as the
// server's statistics count them.
type tupleCounts struct{ upd, hot int64 }

// tupleUpdates reads a table's update counts (every update of the insert,
// run and latency phases) from pg_stat_user_tables, a second after the
// last task ended: a busy backend reports its counts at most once a
// second, so the last few may be missing; the share of HOT updates is
// what the figures are for.
func tupleUpdates(ctx context.Context, dsn, table string) (tupleCounts, error) {
	if err := benchkit.SleepCtx(ctx, 1100*time.Millisecond); err != nil {
		return tupleCounts{}, err
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return tupleCounts{}, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var c tupleCounts
	err = conn.QueryRow(ctx, `SELECT COALESCE(sum(n_tup_upd), 0), COALESCE(sum(n_tup_hot_upd), 0) FROM pg_stat_user_tables WHERE relname = $1`, table).Scan(&c.upd, &c.hot)
	if err != nil {
		return tupleCounts{}, fmt.Errorf("update counts of %s: %w", table, err)
	}
	return c, nil
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// tenant is the name of tenant (queue) i.
func tenant(i int) string { return fmt.Sprintf("t%d", i+1) }

// dispatchSystem is the dispatcher: nodes dispatchers in this process
// sharing one database, each with its own connection pool.
type dispatchSystem struct {
	nodes   []*dispatch.Dispatcher
	tenants int
}

func newDispatchSystem(ctx context.Context, dsn string, nodes int, caps dpCaps, starts *dpStarts) (*dispatchSystem, error) {
	s := &dispatchSystem{tenants: len(caps.caps)}
	for i := range nodes {
		d, err := dispatch.Open(ctx, dispatch.Config{Driver: "postgres", DSN: dsn, NodeID: fmt.Sprintf("bench%d", i),
			FinishOnReturn: true, Logger: quietLogger(),
			OnStart: func(_ context.Context, t dispatch.Task) error {
				ns, err := strconv.ParseInt(string(t.Info), 10, 64)
				if err != nil {
					return fmt.Errorf("task %s: stamp %q: %w", t.UUID, t.Info, err)
				}
				starts.started(ns)
				return nil
			}})
		if err != nil {
			return nil, errors.Join(err, s.close(ctx))
		}
		s.nodes = append(s.nodes, d)
	}
	d0 := s.nodes[0]
	if err := d0.SetGlobalMax(ctx, caps.global); err != nil {
		return nil, errors.Join(err, s.close(ctx))
	}
	for i, c := range caps.caps {
		if err := d0.PutWorker(ctx, dispatch.Worker{Name: tenant(i), MaxRunning: c}); err != nil {
			return nil, errors.Join(err, s.close(ctx))
		}
	}
	return s, nil
}

func (s *dispatchSystem) insert(ctx context.Context, n, first int, prefix string) error {
	for j, off := 0, 0; off < n; j, off = j+1, off+1000 {
		ts := make([]dispatch.NewTask, min(1000, n-off))
		stamp := []byte(strconv.FormatInt(time.Now().UnixNano(), 10))
		for i := range ts {
			ts[i] = dispatch.NewTask{ExternalID: fmt.Sprintf("%s-%d", prefix, off+i), Info: stamp}
		}
		now := time.Now()
		a := dispatch.Assignment{Worker: tenant((first + j) % s.tenants), Start: now, End: now.Add(time.Minute), Tasks: ts, Timeout: time.Hour}
		if _, err := s.nodes[0].Assign(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

func (s *dispatchSystem) start(ctx context.Context) error {
	for _, d := range s.nodes {
		if err := d.Start(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (s *dispatchSystem) live(ctx context.Context) (int, error) {
	var n int
	err := s.nodes[0].DB().QueryRowContext(ctx, `SELECT count(*) FROM dispatch_tasks WHERE status IN ('waiting', 'running')`).Scan(&n)
	return n, err
}

func (s *dispatchSystem) close(ctx context.Context) error {
	var errs []error
	for _, d := range s.nodes {
		errs = append(errs, d.Close(ctx))
	}
	return errors.Join(errs...)
}

// riverArgs is a River job: its insert stamp.
type riverArgs struct {
	Stamp int64 `json:"stamp"`
}

// Kind names the job kind for River.
func (riverArgs) Kind() string { return "bench" }

// riverSystem is River: nodes clients in this process on one database,
// each with its own pgx pool; client 0 inserts.
type riverSystem struct {
	pools   []*pgxpool.Pool
	clients []*river.Client[pgx.Tx]
	tenants int
	started bool
}

func newRiverSystem(ctx context.Context, dsn string, nodes int, caps dpCaps, starts *dpStarts) (*riverSystem, error) {
	s := &riverSystem{tenants: len(caps.caps)}
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(func(_ context.Context, job *river.Job[riverArgs]) error {
		starts.started(job.Args.Stamp)
		return nil
	}))
	queues := map[string]river.QueueConfig{}
	for i, c := range caps.caps {
		queues[tenant(i)] = river.QueueConfig{MaxWorkers: c}
	}
	for i := range nodes {
		pool, err := pgxpool.New(ctx, dsn)
		if err != nil {
			return nil, errors.Join(err, s.close(ctx))
		}
		s.pools = append(s.pools, pool)
		if i == 0 {
			m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
			if err != nil {
				return nil, errors.Join(err, s.close(ctx))
			}
			if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
				return nil, errors.Join(fmt.Errorf("migrate: %w", err), s.close(ctx))
			}
		}
		c, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Queues: queues, Workers: workers, Logger: quietLogger()})
		if err != nil {
			return nil, errors.Join(err, s.close(ctx))
		}
		s.clients = append(s.clients, c)
	}
	return s, nil
}

func (s *riverSystem) insert(ctx context.Context, n, first int, _ string) error {
	for j, off := 0, 0; off < n; j, off = j+1, off+1000 {
		params := make([]river.InsertManyParams, min(1000, n-off))
		stamp := time.Now().UnixNano()
		opts := &river.InsertOpts{Queue: tenant((first + j) % s.tenants)}
		for i := range params {
			params[i] = river.InsertManyParams{Args: riverArgs{Stamp: stamp}, InsertOpts: opts}
		}
		if _, err := s.clients[0].InsertManyFast(ctx, params); err != nil {
			return err
		}
	}
	return nil
}

func (s *riverSystem) start(ctx context.Context) error {
	for _, c := range s.clients {
		if err := c.Start(ctx); err != nil {
			return err
		}
	}
	s.started = true
	return nil
}

func (s *riverSystem) live(ctx context.Context) (int, error) {
	var n int
	err := s.pools[0].QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state <> 'completed'`).Scan(&n)
	return n, err
}

func (s *riverSystem) close(ctx context.Context) error {
	var errs []error
	if s.started {
		for _, c := range s.clients {
			errs = append(errs, c.Stop(ctx))
		}
	}
	for _, p := range s.pools {
		p.Close()
	}
	return errors.Join(errs...)
}
