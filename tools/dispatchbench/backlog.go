package main

// The backlog runs (-backlog): how the claim's rate depends on the number
// of waiting tasks it does not take.
//
// For each backlog size N, on a fresh database of the PostgreSQL server:
// three tenants (caps -backlog-caps) and N waiting tasks, due with
// acceptable starts over the next hour (-backlog-at due) or not due for an
// hour (-backlog-at later); VACUUM ANALYZE, as autovacuum would soon do;
// then W work tasks (-backlog-work) ahead of the backlog in EDF order: all
// due, with acceptable starts in the hour before (late), or, with
// -backlog-release R, due one after another at R a second, each with ten
// minutes to start. Both sets are loaded in bulk (INSERT ... SELECT over
// generate_series) as copies of one task per tenant that Assign wrote, so
// their rows are the API's. The nodes start and run with a handler that
// returns at once (FinishOnReturn); the clock stops when the W-th work
// task starts. claims_per_sec is W over that
// time (from the start, or from the first release): every claim of the
// run is made beside the whole backlog. start_p50_ms and start_p99_ms run
// from a work task's expected start to its handler.
//
// The claim's plan is read from auto_explain (EXPLAIN ANALYZE with
// BUFFERS of a sample of the statements the nodes run, logged by the
// server): the median claim's time and buffers, and whether any sampled
// claim joined by hash or merge or read the tasks with a sequential scan.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardjob/shardjob/dispatch"
	"github.com/shardjob/shardjob/internal/testing/pgtest"
)

// backlogParams are the -backlog flags.
type backlogParams struct {
	sizes    []int
	work     int
	caps     string
	at       string
	nodes    int
	batch    int
	plansDir string
	release  int  // work tasks due per second; 0: all due at the start
	analyze  bool // analyze the backlog before the run (else VACUUM only, autovacuum off)
}

// backlogCaps are the cap settings -backlog-caps names: three tenants'
// caps and the global one.
var backlogCaps = map[string]struct {
	caps   []int
	global int
}{
	"open":   {[]int{1000, 1000, 1000}, 3000},
	"capped": {[]int{5, 10, 20}, 30},
}

// parseSizes reads a comma-separated list of backlog sizes.
func parseSizes(list string) ([]int, error) {
	var out []int
	for s := range strings.SplitSeq(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("-backlog: %q is not a size", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// runBacklog makes one run per backlog size on one PostgreSQL server.
func runBacklog(ctx context.Context, p backlogParams) error {
	if _, ok := backlogCaps[p.caps]; !ok {
		return fmt.Errorf("-backlog-caps: %q is neither open nor capped", p.caps)
	}
	if p.at != "due" && p.at != "later" {
		return fmt.Errorf("-backlog-at: %q is neither due nor later", p.at)
	}
	if p.release > 0 && p.at != "later" {
		return errors.New("-backlog-release needs -backlog-at later: a due backlog would come before the work released")
	}
	if p.work < 3 {
		return errors.New("-backlog-work must be at least 3")
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	srv, err := pgtest.Start(sctx)
	cancel()
	if err != nil {
		return err
	}
	defer func() {
		if err := srv.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "bench: stop PostgreSQL:", err)
		}
	}()
	for _, n := range p.sizes {
		if err := backlogRun(ctx, srv, p, n); err != nil {
			return fmt.Errorf("backlog %d: %w", n, err)
		}
	}
	return nil
}

// autoExplain makes the server log EXPLAIN (ANALYZE, BUFFERS) of a sample
// of the statements of every later session on the database.
var autoExplain = []string{
	`session_preload_libraries = 'auto_explain'`,
	`auto_explain.log_min_duration = 0`,
	`auto_explain.sample_rate = 0.1`,
	`auto_explain.log_analyze = on`,
	`auto_explain.log_buffers = on`,
}

func backlogRun(ctx context.Context, srv *pgtest.Server, p backlogParams, n int) error {
	dsn, err := srv.NewDatabase(ctx)
	if err != nil {
		return err
	}
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer admin.Close(context.WithoutCancel(ctx))
	var db string
	if err := admin.QueryRow(ctx, `SELECT current_database()`).Scan(&db); err != nil {
		return err
	}
	for _, s := range autoExplain {
		if _, err := admin.Exec(ctx, `ALTER DATABASE `+db+` SET `+s); err != nil {
			return err
		}
	}
	var workStarted atomic.Int64
	var done atomic.Int64 // UnixNano of the W-th work start
	var mu sync.Mutex
	var lat []time.Duration
	w := int64(p.work)
	ds, err := startNodes(ctx, "postgres", dsn, p.nodes, p.batch, func(*dispatch.Dispatcher) dispatch.StartFunc {
		return func(_ context.Context, t dispatch.Task) error {
			if !strings.HasPrefix(t.ExternalID, "work-") {
				return nil
			}
			l := time.Since(t.ExpectedStart)
			mu.Lock()
			lat = append(lat, l)
			mu.Unlock()
			if workStarted.Add(1) == w {
				done.Store(time.Now().UnixNano())
			}
			return nil
		}
	}, true)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := closeAll(ds); cerr != nil {
			fmt.Fprintln(os.Stderr, "bench: close:", cerr)
		}
	}()
	d0 := ds[0]
	cs := backlogCaps[p.caps]
	if err := d0.SetGlobalMax(ctx, cs.global); err != nil {
		return err
	}
	tenants := len(cs.caps)
	// The backlog: due since a second ago with acceptable starts over the
	// next hour, or an hour's window starting in an hour.
	backlogStart := time.Now().Add(-time.Second)
	if p.at == "later" {
		backlogStart = backlogStart.Add(time.Hour)
	}
	for i, c := range cs.caps {
		name := fmt.Sprintf("t%d", i+1)
		if err := d0.PutWorker(ctx, dispatch.Worker{Name: name, MaxRunning: c}); err != nil {
			return err
		}
		if err := bulkTasks(ctx, d0, name, "backlog", share(n, tenants, i), backlogStart, backlogStart.Add(time.Hour), 0); err != nil {
			return err
		}
	}
	vacuum := `VACUUM ANALYZE dispatch_tasks`
	if !p.analyze {
		// A backlog the planner has no statistics for, as a fresh load
		// is until autovacuum first analyzes it (kept off for the run).
		if _, err := admin.Exec(ctx, `ALTER TABLE dispatch_tasks SET (autovacuum_enabled = off)`); err != nil {
			return err
		}
		vacuum = `VACUUM dispatch_tasks`
	}
	if _, err := admin.Exec(ctx, vacuum); err != nil {
		return err
	}
	// The work, ahead of the backlog in EDF order: all due, with
	// acceptable starts over the hour before now; or, with a release
	// rate, due one after another from a second on, each to start within
	// ten minutes of its expected start.
	start := time.Now()
	for i := range cs.caps {
		name := fmt.Sprintf("t%d", i+1)
		k := share(p.work, tenants, i)
		if p.release > 0 {
			start = time.Now().Add(time.Second).Truncate(time.Millisecond)
			err = bulkTasks(ctx, d0, name, "work", k, start, start.Add(10*time.Minute), time.Duration(float64(tenants)*float64(time.Second)/float64(p.release)))
		} else {
			err = bulkTasks(ctx, d0, name, "work", k, start.Add(-time.Hour), start.Add(-time.Minute), 0)
		}
		if err != nil {
			return err
		}
	}
	logPath := filepath.Join(srv.Dir, "server.log")
	from, err := fileSize(logPath)
	if err != nil {
		return err
	}
	if p.release == 0 {
		start = time.Now()
	}
	for _, d := range ds {
		if err := d.Start(ctx); err != nil {
			return err
		}
	}
	limit := time.Now().Add(10 * time.Minute)
	for done.Load() == 0 {
		if time.Now().After(limit) {
			return fmt.Errorf("%d of %d work tasks started in 10 minutes", workStarted.Load(), p.work)
		}
		time.Sleep(2 * time.Millisecond)
	}
	took := time.Duration(done.Load() - start.UnixNano())
	if cerr := closeAll(ds); cerr != nil {
		return cerr
	}
	ds = nil
	plans, err := readPlans(logPath, from, "WITH fr AS")
	if err != nil {
		return err
	}
	s := summarize(plans, "dispatch_tasks")
	mu.Lock()
	p50, p99 := pct(lat, 50), pct(lat, 99)
	mu.Unlock()
	fmt.Printf("bench backlog store=postgres nodes=%d batch=%d caps=%s backlog=%d backlog_at=%s analyzed=%t work=%d release_per_sec=%d seconds=%.2f claims_per_sec=%.0f start_p50_ms=%.2f start_p99_ms=%.2f claim_plans=%d claim_ms_p50=%.2f claim_buffers_p50=%d hash_tasks=%t merge_join=%t seq_scan_tasks=%t\n",
		p.nodes, p.batch, p.caps, n, p.at, p.analyze, p.work, p.release, took.Seconds(), float64(p.work)/took.Seconds(), ms(p50), ms(p99), len(plans), s.msP50, s.buffersP50, s.hash, s.merge, s.seqScan)
	if p.plansDir != "" && s.median != "" {
		name := filepath.Join(p.plansDir, fmt.Sprintf("shardjob-%s-%s-%d.txt", p.caps, p.at, n))
		if err := os.WriteFile(name, []byte(s.median), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// share is tenant i's part of n tasks split over k tenants.
func share(n, k, i int) int {
	s := n / k
	if i < n%k {
		s++
	}
	return s
}

// bulkTasks adds n waiting tasks named prefix-0 ... to worker. With step
// 0 they are one assignment spread over [start, end] as Assign spreads
// them; with a step, the i-th is an assignment of its own over
// [start+i·step, end+i·step], due one after another. Assign writes the
// first, and the others are copies of its row with their own uuid,
// external id, expected start (and run_at) and acceptable start.
func bulkTasks(ctx context.Context, d *dispatch.Dispatcher, worker, prefix string, n int, start, end time.Time, step time.Duration) error {
	if n == 0 {
		return nil
	}
	ts, err := d.Assign(ctx, dispatch.Assignment{Worker: worker, Start: start, End: end, Timeout: time.Hour,
		Tasks: []dispatch.NewTask{{ExternalID: prefix + "-0", Info: []byte("backlog")}}})
	if err != nil {
		return err
	}
	if n == 1 {
		return nil
	}
	span := end.Truncate(time.Microsecond).Sub(start.Truncate(time.Microsecond)).Microseconds()
	// Spread: the i-th of n (from 0) at start + (i+1)·(end−start)/n; one
	// task an assignment: at its end.
	acc := `t.expected_start + (i + 1) * $3::bigint / $4::bigint`
	if step > 0 {
		acc = `t.expected_start + i * $5::bigint + $3::bigint`
	}
	_, err = d.DB().ExecContext(ctx, `INSERT INTO dispatch_tasks (uuid, worker, external_id, info, expected_start, acceptable_start, run_at, status,
    attempts, max_retries, timeout_us, lease_owner, deadline, late, created_at, started_at, ended_at, last_error, trace_context)
SELECT gen_random_uuid()::text, t.worker, $2 || '-' || i, t.info, t.expected_start + i * $5::bigint, `+acc+`, t.run_at + i * $5::bigint, t.status,
    t.attempts, t.max_retries, t.timeout_us, t.lease_owner, t.deadline, t.late, t.created_at, t.started_at, t.ended_at, t.last_error, t.trace_context
FROM dispatch_tasks t CROSS JOIN generate_series(1, $4::bigint - 1) i WHERE t.uuid = $1`, ts[0].UUID, prefix, span, n, step.Microseconds())
	if err != nil || step > 0 {
		return err
	}
	// The first task's acceptable start as the spread over n puts it.
	_, err = d.DB().ExecContext(ctx, `UPDATE dispatch_tasks SET acceptable_start = expected_start + $2::bigint / $3::bigint WHERE uuid = $1`, ts[0].UUID, span, n)
	return err
}

func fileSize(path string) (int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// loggedPlan is one plan auto_explain logged.
type loggedPlan struct {
	ms   float64
	text string
}

// readPlans returns the plans logged in path after offset from whose
// query text contains marker. An entry of the server's log starts at a
// line that does not start with a tab; auto_explain's starts with
// "duration: X ms  plan:" and goes on with tab-indented lines.
func readPlans(path string, from int64, marker string) ([]loggedPlan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if from > int64(len(data)) {
		from = 0
	}
	var out []loggedPlan
	var cur []string
	flush := func() {
		if len(cur) == 0 {
			return
		}
		head := cur[0]
		i := strings.Index(head, "duration: ")
		j := strings.Index(head, " ms  plan:")
		text := strings.Join(cur[1:], "\n")
		cur = cur[:0]
		if i < 0 || j < i || !strings.Contains(text, marker) {
			return
		}
		ms, err := strconv.ParseFloat(head[i+len("duration: "):j], 64)
		if err != nil {
			return
		}
		out = append(out, loggedPlan{ms: ms, text: text})
	}
	for line := range strings.SplitSeq(string(data[from:]), "\n") {
		if strings.HasPrefix(line, "\t") && len(cur) > 0 {
			cur = append(cur, line)
			continue
		}
		flush()
		cur = append(cur, line)
	}
	flush()
	return out, nil
}

// planSummary is what the backlog runs report of the sampled plans.
type planSummary struct {
	msP50                float64
	buffersP50           int
	hash, merge, seqScan bool   // any sampled claim hashed the tasks, merge-joined, read the tasks whole
	median               string // the plan of the median claim
}

func summarize(plans []loggedPlan, table string) planSummary {
	var s planSummary
	if len(plans) == 0 {
		return s
	}
	sorted := slices.Clone(plans)
	slices.SortFunc(sorted, func(a, b loggedPlan) int {
		switch {
		case a.ms < b.ms:
			return -1
		case a.ms > b.ms:
			return 1
		}
		return 0
	})
	m := sorted[len(sorted)/2]
	s.msP50, s.median = m.ms, m.text
	var bufs []int
	for _, p := range plans {
		bufs = append(bufs, topBuffers(p.text))
		s.hash = s.hash || hashes(p.text, table)
		s.merge = s.merge || strings.Contains(p.text, "Merge Join")
		s.seqScan = s.seqScan || strings.Contains(p.text, "Seq Scan on "+table+" ") || strings.Contains(p.text, "Bitmap Heap Scan on "+table+" ")
	}
	slices.Sort(bufs)
	s.buffersP50 = bufs[len(bufs)/2]
	return s
}

// hashes tells whether a plan builds a hash table from a read of table:
// a Hash node with a scan of it below (the claim's hashes of a few
// workers' counts do not count).
func hashes(plan, table string) bool {
	lines := strings.Split(plan, "\n")
	for i, l := range lines {
		if !strings.Contains(l, "->  Hash  ") {
			continue
		}
		depth := indent(l)
		for _, m := range lines[i+1:] {
			if indent(m) <= depth {
				break
			}
			if strings.Contains(m, " on "+table+" ") {
				return true
			}
		}
	}
	return false
}

func indent(l string) int { return len(l) - len(strings.TrimLeft(l, " \t")) }

// topBuffers is the shared buffers (hit and read) of a plan's top node:
// the first "Buffers:" line after the query text.
func topBuffers(text string) int {
	for line := range strings.SplitSeq(text, "\n") {
		_, rest, ok := strings.Cut(line, "Buffers: shared ")
		if !ok {
			continue
		}
		n := 0
		for f := range strings.FieldsSeq(rest) {
			k, v, ok := strings.Cut(f, "=")
			if !ok || (k != "hit" && k != "read") {
				continue
			}
			x, err := strconv.Atoi(v)
			if err == nil {
				n += x
			}
		}
		return n
	}
	return 0
}
