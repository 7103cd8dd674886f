package dispatch

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"
)

// claimBacklog opens a store with three capped workers (5, 10 and 20 slots,
// 30 in all) and a backlog of n waiting tasks, all due, as a bulk load
// leaves it; autovacuum is off for the tasks, so the statistics are what
// the test makes them.
func claimBacklog(t *testing.T, cfg Config, n int) (*Dispatcher, time.Time) {
	t.Helper()
	ctx := testCtx(t)
	clk := newFakeClock()
	cfg.Clock = clk
	d := open(t, cfg)
	if cfg.Driver == "postgres" {
		if _, err := d.DB().ExecContext(ctx, `ALTER TABLE dispatch_tasks SET (autovacuum_enabled = off)`); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.SetGlobalMax(ctx, 30); err != nil {
		t.Fatal(err)
	}
	for i, c := range []int{5, 10, 20} {
		mustWorker(t, d, fmt.Sprintf("w%d", i), c)
	}
	for j, off := 0, 0; off < n; j, off = j+1, off+1000 {
		ts := make([]NewTask, min(1000, n-off))
		for i := range ts {
			ts[i] = NewTask{ExternalID: fmt.Sprintf("x-%d", off+i), Info: []byte("stamp")}
		}
		now := clk.Now()
		a := Assignment{Worker: fmt.Sprintf("w%d", j%3), Start: now, End: now.Add(time.Minute), Tasks: ts, Timeout: time.Hour}
		if _, err := d.Assign(ctx, a); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Millisecond)
	}
	clk.Advance(time.Second)
	return d, clk.Now()
}

// pgClaimPlan is the plan PostgreSQL makes for pgClaim as a claim runs it
// (under pgClaimPlanning), custom (the parameters' values known) or generic
// (the plan a prepared statement may settle on after a few runs).
func pgClaimPlan(t *testing.T, d *Dispatcher, now time.Time, generic bool) string {
	t.Helper()
	mode := "force_custom_plan"
	if generic {
		mode = "force_generic_plan"
	}
	return pgStatementPlan(t, d, mode, pgClaim, fmt.Sprintf(`EXPLAIN EXECUTE p('n1', %d, 1000)`, now.UnixMicro()), pgClaimPlanning)
}

// planLines runs an EXPLAIN and returns its lines (the last column of each
// row: SQLite's EXPLAIN QUERY PLAN puts the text there).
func planLines(t *testing.T, ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string, args ...any) string {
	t.Helper()
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, fmt.Sprint(vals[len(vals)-1]))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "\n")
}

// checkPGClaimPlan fails unless every read of dispatch_tasks in the plan is
// an index scan with an index condition (no Seq Scan, no bitmap scan, no
// whole-index walk) or the UPDATE's visit of each candidate's row by its
// tuple id (a Tid Scan with its condition), the only sort in EDF order is the merge of the
// workers' heads (a sort of a worker's waiting tasks reads all of them),
// and the plan is not compiled with JIT (hundreds of milliseconds a claim).
// Once the tasks are analyzed, a planner free to hash would read the whole
// table to join the chosen tasks (see pgClaimPlanning).
func checkPGClaimPlan(t *testing.T, what, plan string) {
	t.Helper()
	lines := strings.Split(plan, "\n")
	for i, l := range lines {
		if !strings.Contains(l, " on dispatch_tasks ") || strings.Contains(l, "Update on ") {
			continue
		}
		if strings.Contains(l, "Tid Scan on ") {
			if i+1 >= len(lines) || !strings.Contains(lines[i+1], "TID Cond: (ctid = c.tid)") {
				t.Errorf("%s: the claim reads the tasks by tuple id without the candidates' ids: %q\n%s", what, strings.TrimSpace(l), plan)
			}
			continue
		}
		if !strings.Contains(l, "Index Scan using ") && !strings.Contains(l, "Index Only Scan using ") {
			t.Errorf("%s: the claim reads the tasks without an index: %q\n%s", what, strings.TrimSpace(l), plan)
			continue
		}
		if i+1 >= len(lines) || !strings.Contains(lines[i+1], "Index Cond:") {
			t.Errorf("%s: the claim walks a whole index of the tasks: %q\n%s", what, strings.TrimSpace(l), plan)
		}
	}
	if strings.Contains(plan, "Merge Join") {
		t.Errorf("%s: the claim merge-joins\n%s", what, plan)
	}
	if hashesTasks(plan) {
		t.Errorf("%s: the claim hashes a read of the tasks\n%s", what, plan)
	}
	if due := strings.Index(plan, "using dispatch_tasks_due on dispatch_tasks "); due < 0 {
		t.Errorf("%s: the claim does not count a worker's due tasks from dispatch_tasks_due\n%s", what, plan)
	} else if l, _, _ := strings.Cut(plan[due:], "\n"); !strings.Contains(plan[due+len(l):], "Index Cond: ((worker = ") ||
		!strings.Contains(strings.SplitN(plan[due+len(l)+1:], "\n", 2)[0], "run_at <=") {
		t.Errorf("%s: the count of a worker's due tasks does not seek them by worker and run_at\n%s", what, plan)
	}
	if n := strings.Count(plan, "Sort Key: t.acceptable_start"); n != 1 {
		t.Errorf("%s: %d sorts in EDF order, want 1 (the merge of the workers' heads): a worker's waiting tasks are sorted rather than read in order from an index\n%s", what, n, plan)
	}
	if strings.Contains(plan, "JIT:") {
		t.Errorf("%s: the claim is compiled with JIT\n%s", what, plan)
	}
}

// hashesTasks tells whether a plan builds a hash table over a read of
// dispatch_tasks: a Hash node with a scan of the tasks below it. (The
// claim's full join of taken and freed slots per worker hashes a handful
// of rows from its CTEs, not the tasks.)
func hashesTasks(plan string) bool {
	lines := strings.Split(plan, "\n")
	indent := func(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }
	for i, l := range lines {
		if !strings.Contains(l, "->  Hash  ") {
			continue
		}
		for _, m := range lines[i+1:] {
			if indent(m) <= indent(l) {
				break
			}
			if strings.Contains(m, " on dispatch_tasks ") {
				return true
			}
		}
	}
	return false
}

// A claim reads each worker's first waiting tasks in EDF order from an
// index, never every waiting task of a worker (sorted to find its first
// few), whether the planner has statistics on the tasks or not, custom or
// generic; it reads the chosen tasks by their key too, analyzed or not. Checked
// on the plan, so that the test does not depend on timing: with 20,000
// waiting tasks either mistake costs milliseconds per claim, under the
// lock every claim takes, and grows with the backlog.
func TestClaimPlanReadsHeadsNotBacklog(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		ctx := testCtx(t)
		d, now := claimBacklog(t, cfg, 20000)
		if cfg.Driver == "sqlite" {
			for _, stats := range []string{"without statistics", "analyzed"} {
				if stats == "analyzed" {
					if _, err := d.DB().ExecContext(ctx, `ANALYZE`); err != nil {
						t.Fatal(err)
					}
				}
				plan := planLines(t, ctx, d.DB(), `EXPLAIN QUERY PLAN `+sqliteHeads, "run", "w0", now.UnixMicro(), 20)
				if !strings.Contains(plan, "USING INDEX") && !strings.Contains(plan, "USING COVERING INDEX") {
					t.Errorf("%s: a worker's head is not read through an index:\n%s", stats, plan)
				}
				if strings.Contains(plan, "TEMP B-TREE") {
					t.Errorf("%s: a worker's waiting tasks are sorted to find its head:\n%s", stats, plan)
				}
			}
			return
		}
		if _, err := d.DB().ExecContext(ctx, `INSERT INTO dispatch_nodes (id, expires) VALUES ('n1', $1)`, now.Add(time.Hour).UnixMicro()); err != nil {
			t.Fatal(err)
		}
		for _, stats := range []string{"without statistics", "analyzed"} {
			if stats == "analyzed" {
				if _, err := d.DB().ExecContext(ctx, `ANALYZE dispatch_tasks`); err != nil {
					t.Fatal(err)
				}
			}
			checkPGClaimPlan(t, stats+", custom plan", pgClaimPlan(t, d, now, false))
			checkPGClaimPlan(t, stats+", generic plan", pgClaimPlan(t, d, now, true))
		}
		// The claim itself still fills the caps.
		if _, err := d.DB().ExecContext(ctx, `UPDATE dispatch_nodes SET expires = $1 WHERE id = 'n1'`, now.Add(time.Hour).UnixMicro()); err != nil {
			t.Fatal(err)
		}
		c, err := d.st.claim(ctx, "n1", now, 1000)
		if err != nil {
			t.Fatal(err)
		}
		per := map[string]int{}
		for _, tk := range c.started {
			per[tk.Worker]++
		}
		if len(c.started) != 30 || per["w0"] > 5 || per["w1"] > 10 || per["w2"] > 20 {
			t.Errorf("started %d tasks (%v), want 30 (the global cap) within the workers' caps of 5, 10 and 20", len(c.started), per)
		}
	})
}

// A claim beside a large backlog of tasks not due yet reads only the tasks
// it starts: it counts each worker's due tasks from dispatch_tasks_due (at
// most its free slots) and stops its EDF walk of the worker's waiting
// tasks once it has that many, so the not-due tasks behind them are never
// read, even when a worker has fewer due tasks than free slots. Before,
// such a worker had every waiting task read on every claim (590 ms a
// claim beside 1,000,000). Checked on the plan and on the row counts of
// EXPLAIN ANALYZE (a claim run in a transaction rolled back), analyzed and
// not, custom and generic, never on time: no hash of the tasks, no merge
// join, no sequential or bitmap read of the tasks, and no scan of the
// tasks that reads a row it then filters out.
func TestClaimPlanReadsNoFutureBacklog(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		if cfg.Driver != "postgres" {
			t.Skip("the claim is one statement on PostgreSQL only")
		}
		ctx := testCtx(t)
		clk := newFakeClock()
		cfg.Clock = clk
		d := open(t, cfg)
		if _, err := d.DB().ExecContext(ctx, `ALTER TABLE dispatch_tasks SET (autovacuum_enabled = off)`); err != nil {
			t.Fatal(err)
		}
		if err := d.SetGlobalMax(ctx, 30); err != nil {
			t.Fatal(err)
		}
		now := clk.Now()
		for i, c := range []int{5, 10, 20} {
			w := fmt.Sprintf("w%d", i)
			mustWorker(t, d, w, c)
			// Two due tasks: fewer than any worker's free slots.
			if _, err := d.Assign(ctx, Assignment{Worker: w, Start: now.Add(-time.Second), End: now.Add(time.Minute), Tasks: newTasks(w+"-due-0", w+"-due-1"), Timeout: time.Hour}); err != nil {
				t.Fatal(err)
			}
		}
		// 20,000 more, due in an hour.
		for j := range 20 {
			ts := make([]NewTask, 1000)
			for i := range ts {
				ts[i] = NewTask{ExternalID: fmt.Sprintf("later-%d-%d", j, i)}
			}
			a := Assignment{Worker: fmt.Sprintf("w%d", j%3), Start: now.Add(time.Hour), End: now.Add(2 * time.Hour), Tasks: ts, Timeout: time.Hour}
			if _, err := d.Assign(ctx, a); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := d.DB().ExecContext(ctx, `INSERT INTO dispatch_nodes (id, expires) VALUES ('n1', $1)`, now.Add(time.Hour).UnixMicro()); err != nil {
			t.Fatal(err)
		}
		for _, stats := range []string{"without statistics", "analyzed"} {
			if stats == "analyzed" {
				if _, err := d.DB().ExecContext(ctx, `ANALYZE dispatch_tasks`); err != nil {
					t.Fatal(err)
				}
			}
			for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
				what := stats + ", " + mode
				plan := pgStatementPlan(t, d, mode, pgClaim, fmt.Sprintf(`EXPLAIN (ANALYZE, BUFFERS) EXECUTE p('n1', %d, 1000)`, now.UnixMicro()), pgClaimPlanning)
				checkPGClaimPlan(t, what, plan)
				if strings.Contains(plan, "Seq Scan on dispatch_tasks ") || strings.Contains(plan, "Bitmap Heap Scan on dispatch_tasks ") {
					t.Errorf("%s: the claim reads the tasks whole\n%s", what, plan)
				}
				lines := strings.Split(plan, "\n")
				for i, l := range lines {
					if !strings.Contains(l, " on dispatch_tasks ") || strings.Contains(l, "Update on ") {
						continue
					}
					for _, m := range lines[i+1:] {
						if strings.Contains(m, "->") {
							break
						}
						if strings.Contains(m, "Rows Removed by Filter:") {
							t.Errorf("%s: the claim reads tasks it does not take: %q under %q\n%s", what, strings.TrimSpace(m), strings.TrimSpace(l), plan)
						}
					}
				}
				if !strings.Contains(plan, "CTE Scan on upd  (cost=") || !strings.Contains(plan, "rows=6 loops=1)\n") {
					t.Errorf("%s: the claim did not start the 6 due tasks\n%s", what, plan)
				}
			}
			// The fetcher's look for the next start probes each worker's
			// first task after now, in the due index's order.
			next := planLines(t, ctx, d.DB(), `EXPLAIN `+strings.Replace(pgNextRunAt, "?", "$1", 1), now.UnixMicro())
			if !strings.Contains(next, "Scan using dispatch_tasks_due on dispatch_tasks t") || strings.Contains(next, "Sort") {
				t.Errorf("%s: the next start is not read from the due index, in its order:\n%s", stats, next)
			}
		}
	})
}
