package main

// The dispatcher beside River at a backlog: how fast each starts W tasks
// (-dp.backlog.work) while N more wait behind them (-dp.backlog), on one
// PostgreSQL server that the test starts, one system after the other,
// each in a database of its own, with the same settings. It is a test,
// skipped unless -dp.backlog is given, because the benchmark's flags are
// main.go's:
//
//	cd bench && go test -run TestDispatchBacklog -count=1 -timeout 60m -v . -args -dp.backlog 0,10000,100000,1000000
//
// For each system and N: caps "open" (three tenants or queues of 1,000,
// a global 3,000 for the dispatcher), then N waiting tasks loaded in bulk
// (INSERT ... SELECT over generate_series, copies of one row per tenant
// that the system's own insert wrote), due (-dp.backlog.at due: the
// dispatcher's with acceptable starts over the next hour, River's
// scheduled a second ago) or due in an hour (later: River's in its state
// "scheduled"); VACUUM ANALYZE; then W work tasks through the system's
// insert, ahead of the backlog in its order (the dispatcher's with
// acceptable starts in the hour before, River's scheduled an hour ago).
// The nodes start, the handler returns at once, and the clock stops at
// the W-th start: claims_per_sec is W over that time. The claim's plan
// (the dispatcher's claim statement, River's JobGetAvailable) is sampled
// by auto_explain (EXPLAIN ANALYZE with BUFFERS of 10% of the statements):
// the median claim's time and its top node's buffers.

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/shardjob/shardjob/dispatch"
	"github.com/shardjob/shardjob/internal/testing/pgtest"
)

var (
	dpBacklog     = flag.String("dp.backlog", "", "backlog sizes, comma-separated; empty skips TestDispatchBacklog")
	dpBacklogWork = flag.Int("dp.backlog.work", 30000, "tasks started ahead of the backlog")
	dpBacklogAt   = flag.String("dp.backlog.at", "due", "the backlog is due (behind the work) or later (due in an hour)")
	dpBacklogSys  = flag.String("dp.backlog.systems", "shardjob,river", "systems, in the order run")
	dpBacklogPlan = flag.String("dp.backlog.plans", "", "write each run's median claim plan to this directory")
)

func TestDispatchBacklog(t *testing.T) {
	if *dpBacklog == "" {
		t.Skip("-dp.backlog not given")
	}
	var sizes []int
	for s := range strings.SplitSeq(*dpBacklog, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 0 {
			t.Fatalf("-dp.backlog: %q is not a size", s)
		}
		sizes = append(sizes, n)
	}
	if *dpBacklogAt != "due" && *dpBacklogAt != "later" {
		t.Fatalf("-dp.backlog.at: %q is neither due nor later", *dpBacklogAt)
	}
	systems, err := parseList("-dp.backlog.systems", *dpBacklogSys, dpSystems)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	srv, err := pgtest.Start(sctx)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	}()
	for _, n := range sizes {
		for _, sys := range systems {
			line, err := backlogPeerRun(ctx, srv, sys, n, *dpBacklogWork, *dpBacklogAt)
			if err != nil {
				t.Fatalf("%s, backlog %d: %v", sys, n, err)
			}
			fmt.Println(line)
		}
	}
}

// backlogPeerRun is one system at one backlog size, on a fresh database.
func backlogPeerRun(ctx context.Context, srv *pgtest.Server, system string, n, work int, at string) (string, error) {
	dsn, err := srv.NewDatabase(ctx)
	if err != nil {
		return "", err
	}
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", err
	}
	defer admin.Close(context.WithoutCancel(ctx))
	var db string
	if err := admin.QueryRow(ctx, `SELECT current_database()`).Scan(&db); err != nil {
		return "", err
	}
	for _, s := range []string{`session_preload_libraries = 'auto_explain'`, `auto_explain.log_min_duration = 0`,
		`auto_explain.sample_rate = 0.1`, `auto_explain.log_analyze = on`, `auto_explain.log_buffers = on`} {
		if _, err := admin.Exec(ctx, `ALTER DATABASE `+db+` SET `+s); err != nil {
			return "", err
		}
	}
	caps := dpCapSets["open"]
	starts := &dpStarts{}
	var sys dpSystem
	var table, marker string
	switch system {
	case "shardjob":
		sys, err = newDispatchSystem(ctx, dsn, 3, caps, starts)
		table, marker = "dispatch_tasks", "WITH fr AS"
	case "river":
		sys, err = newRiverSystem(ctx, dsn, 3, caps, starts)
		table, marker = "river_job", "JobGetAvailable"
	}
	if err != nil {
		return "", err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := sys.close(cctx); err != nil {
			fmt.Fprintln(os.Stderr, "close:", err)
		}
	}()
	now := time.Now()
	for i := range caps.caps {
		k := n / len(caps.caps)
		if i < n%len(caps.caps) {
			k++
		}
		if err := backlogLoad(ctx, sys, admin, tenant(i), k, now, at); err != nil {
			return "", fmt.Errorf("load: %w", err)
		}
	}
	if _, err := admin.Exec(ctx, `VACUUM ANALYZE `+table); err != nil {
		return "", err
	}
	if err := backlogWork(ctx, sys, work, now); err != nil {
		return "", fmt.Errorf("work: %w", err)
	}
	logPath := filepath.Join(srv.Dir, "server.log")
	fi, err := os.Stat(logPath)
	if err != nil {
		return "", err
	}
	t0 := time.Now()
	if err := sys.start(ctx); err != nil {
		return "", err
	}
	limit := time.Now().Add(10 * time.Minute)
	for starts.n.Load() < int64(work) {
		if time.Now().After(limit) {
			return "", fmt.Errorf("%d of %d work tasks started in 10 minutes", starts.n.Load(), work)
		}
		time.Sleep(2 * time.Millisecond)
	}
	took := time.Since(t0)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	err = sys.close(cctx)
	cancel()
	if err != nil {
		return "", err
	}
	sys = closedSystem{}
	plans, err := peerPlans(logPath, fi.Size(), marker)
	if err != nil {
		return "", err
	}
	msP50, bufP50, median := peerPlanSummary(plans)
	if *dpBacklogPlan != "" && median != "" {
		if err := os.WriteFile(filepath.Join(*dpBacklogPlan, fmt.Sprintf("%s-%s-%d.txt", system, at, n)), []byte(median), 0o644); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("bench backlog system=%s caps=open nodes=3 backlog=%d backlog_at=%s work=%d seconds=%.2f claims_per_sec=%.0f claim_plans=%d claim_ms_p50=%.2f claim_buffers_p50=%d",
		system, n, at, work, took.Seconds(), float64(work)/took.Seconds(), len(plans), msP50, bufP50), nil
}

// closedSystem stands for a system already closed.
type closedSystem struct{ dpSystem }

func (closedSystem) close(context.Context) error { return nil }

// backlogLoad adds n waiting tasks to tenant: the system's insert writes
// one, and the rest are copies of its row.
func backlogLoad(ctx context.Context, sys dpSystem, admin *pgx.Conn, tenant string, n int, now time.Time, at string) error {
	if n == 0 {
		return nil
	}
	start := now.Add(-time.Second)
	if at == "later" {
		start = now.Add(time.Hour)
	}
	switch s := sys.(type) {
	case *dispatchSystem:
		ts, err := s.nodes[0].Assign(ctx, dispatch.Assignment{Worker: tenant, Start: start, End: start.Add(time.Hour), Timeout: time.Hour,
			Tasks: []dispatch.NewTask{{ExternalID: "backlog-0", Info: []byte(strconv.FormatInt(now.UnixNano(), 10))}}})
		if err != nil {
			return err
		}
		span := start.Add(time.Hour).Truncate(time.Microsecond).Sub(start.Truncate(time.Microsecond)).Microseconds()
		_, err = admin.Exec(ctx, `INSERT INTO dispatch_tasks (uuid, worker, external_id, info, expected_start, acceptable_start, run_at, status,
    attempts, max_retries, timeout_us, lease_owner, deadline, late, created_at, started_at, ended_at, last_error, trace_context)
SELECT gen_random_uuid()::text, t.worker, 'backlog-' || i, t.info, t.expected_start, t.expected_start + (i + 1) * $2::bigint / $3::bigint, t.run_at, t.status,
    t.attempts, t.max_retries, t.timeout_us, t.lease_owner, t.deadline, t.late, t.created_at, t.started_at, t.ended_at, t.last_error, t.trace_context
FROM dispatch_tasks t CROSS JOIN generate_series(1, $3::bigint - 1) i WHERE t.uuid = $1`, ts[0].UUID, span, n)
		return err
	case *riverSystem:
		res, err := s.clients[0].InsertManyFast(ctx, []river.InsertManyParams{{Args: riverArgs{Stamp: now.UnixNano()},
			InsertOpts: &river.InsertOpts{Queue: tenant, ScheduledAt: start}}})
		if err != nil || res != 1 {
			return fmt.Errorf("insert the template: %d rows, %v", res, err)
		}
		var cols []string
		rows, err := admin.Query(ctx, `SELECT column_name FROM information_schema.columns WHERE table_name = 'river_job' AND column_name <> 'id' ORDER BY ordinal_position`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				rows.Close()
				return err
			}
			cols = append(cols, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		list := strings.Join(cols, ", ")
		_, err = admin.Exec(ctx, `INSERT INTO river_job (`+list+`) SELECT `+list+` FROM river_job CROSS JOIN generate_series(1, $2::int - 1) WHERE queue = $1`, tenant, n)
		return err
	}
	return fmt.Errorf("unknown system %T", sys)
}

// backlogWork adds work tasks ahead of the backlog, in batches of 1,000
// through the system's insert, the tenants in turn.
func backlogWork(ctx context.Context, sys dpSystem, n int, now time.Time) error {
	for j, off := 0, 0; off < n; j, off = j+1, off+1000 {
		k := min(1000, n-off)
		switch s := sys.(type) {
		case *dispatchSystem:
			ts := make([]dispatch.NewTask, k)
			for i := range ts {
				ts[i] = dispatch.NewTask{ExternalID: fmt.Sprintf("work-%d", off+i), Info: []byte(strconv.FormatInt(now.UnixNano(), 10))}
			}
			a := dispatch.Assignment{Worker: tenant(j % s.tenants), Start: now.Add(-time.Hour), End: now.Add(-time.Minute), Tasks: ts, Timeout: time.Hour}
			if _, err := s.nodes[0].Assign(ctx, a); err != nil {
				return err
			}
		case *riverSystem:
			params := make([]river.InsertManyParams, k)
			opts := &river.InsertOpts{Queue: tenant(j % s.tenants), ScheduledAt: now.Add(-time.Hour)}
			for i := range params {
				params[i] = river.InsertManyParams{Args: riverArgs{Stamp: now.UnixNano()}, InsertOpts: opts}
			}
			if _, err := s.clients[0].InsertManyFast(ctx, params); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unknown system %T", sys)
		}
	}
	return nil
}

// peerPlan is one plan auto_explain logged.
type peerPlan struct {
	ms   float64
	text string
}

// peerPlans returns the plans logged in path after offset from whose
// query text contains marker (as tools/dispatchbench reads them).
func peerPlans(path string, from int64, marker string) ([]peerPlan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if from > int64(len(data)) {
		from = 0
	}
	var out []peerPlan
	var cur []string
	flush := func() {
		if len(cur) == 0 {
			return
		}
		head, text := cur[0], strings.Join(cur[1:], "\n")
		cur = cur[:0]
		i, j := strings.Index(head, "duration: "), strings.Index(head, " ms  plan:")
		if i < 0 || j < i || !strings.Contains(text, marker) {
			return
		}
		if ms, err := strconv.ParseFloat(head[i+len("duration: "):j], 64); err == nil {
			out = append(out, peerPlan{ms: ms, text: text})
		}
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

// peerPlanSummary is the median claim's time, the median of the top
// nodes' shared buffers, and the median claim's plan.
func peerPlanSummary(plans []peerPlan) (float64, int, string) {
	if len(plans) == 0 {
		return 0, 0, ""
	}
	s := slices.Clone(plans)
	slices.SortFunc(s, func(a, b peerPlan) int {
		switch {
		case a.ms < b.ms:
			return -1
		case a.ms > b.ms:
			return 1
		}
		return 0
	})
	var bufs []int
	for _, p := range plans {
		n := 0
		for line := range strings.SplitSeq(p.text, "\n") {
			_, rest, ok := strings.Cut(line, "Buffers: shared ")
			if !ok {
				continue
			}
			for f := range strings.FieldsSeq(rest) {
				if k, v, ok := strings.Cut(f, "="); ok && (k == "hit" || k == "read") {
					if x, err := strconv.Atoi(v); err == nil {
						n += x
					}
				}
			}
			break
		}
		bufs = append(bufs, n)
	}
	slices.Sort(bufs)
	m := s[len(s)/2]
	return m.ms, bufs[len(bufs)/2], m.text
}
