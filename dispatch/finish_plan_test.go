package dispatch

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A PostgreSQL finish reaches every task by its key, analyzed or not,
// custom plan or generic: no join of the statement runs under a join
// filter (a comparison of every request with every locked task, quadratic
// in the batch), and no read of the tasks walks a table or a whole index.
// The planner takes an array parameter for 10 elements, so a join left to
// its estimate is a nested loop whatever the batch's size. Checked on the
// plan of a batch of 500 running tasks, the largest a finisher sends.
func TestFinishPlanJoinsByKey(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		if cfg.Driver != "postgres" {
			t.Skip("the finish is one statement on PostgreSQL only")
		}
		ctx := testCtx(t)
		d, args := finishPlanSetup(t, cfg, false)
		for _, stats := range []string{"without statistics", "analyzed"} {
			if stats == "analyzed" {
				if _, err := d.DB().ExecContext(ctx, `ANALYZE dispatch_tasks`); err != nil {
					t.Fatal(err)
				}
			}
			checkFinishPlans(t, d, stats, args)
		}
	})
}

// Statistics taken while no task ran (a backlog analyzed before the
// nodes started, or at a quiet hour) put the running tasks at a row or
// two, and a finish free to read them through dispatch_tasks_running
// joined every running task with every request under a join filter: 1.5
// million comparisons, 6.5 s, for a batch of 500 beside 3,000 running, on
// every batch until the next analyze. The finish's UPDATE does not repeat
// the running status (its rows are locked running by held), so that index
// is not one it can read.
func TestFinishPlanJoinsByKeyAnalyzedIdle(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		if cfg.Driver != "postgres" {
			t.Skip("the finish is one statement on PostgreSQL only")
		}
		d, args := finishPlanSetup(t, cfg, true)
		checkFinishPlans(t, d, "analyzed while none ran", args)
	})
}

// finishPlanSetup makes a backlog of 20,000 tasks, analyzed first if
// analyze, and starts finishBatchMax of them; it returns the dispatcher
// and the arguments of a finish of those (for EXECUTE p(...)).
func finishPlanSetup(t *testing.T, cfg Config, analyze bool) (*Dispatcher, string) {
	t.Helper()
	ctx := testCtx(t)
	d, now := claimBacklog(t, cfg, 20000)
	if analyze {
		if _, err := d.DB().ExecContext(ctx, `ANALYZE dispatch_tasks`); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.SetGlobalMax(ctx, finishBatchMax); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		mustWorker(t, d, fmt.Sprintf("w%d", i), finishBatchMax)
	}
	if _, err := d.DB().ExecContext(ctx, `INSERT INTO dispatch_nodes (id, expires) VALUES ('n1', $1)`, now.Add(time.Hour).UnixMicro()); err != nil {
		t.Fatal(err)
	}
	c, err := d.st.claim(ctx, "n1", now, finishBatchMax)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.started) != finishBatchMax {
		t.Fatalf("started %d tasks, want %d", len(c.started), finishBatchMax)
	}
	ids := make([]string, len(c.started))
	attempts := make([]string, len(c.started))
	for i, tk := range c.started {
		ids[i], attempts[i] = tk.UUID, fmt.Sprint(tk.Attempt)
	}
	return d, fmt.Sprintf(`'{%s}', '{%s}', %d`, strings.Join(ids, ","), strings.Join(attempts, ","), now.UnixMicro())
}

// checkFinishPlans fails unless the finish's plans, custom and generic,
// join under no filter and read the tasks by key only.
func checkFinishPlans(t *testing.T, d *Dispatcher, stats, args string) {
	t.Helper()
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		what := stats + ", " + mode
		plan := pgStatementPlan(t, d, mode, pgFinish, `EXPLAIN EXECUTE p(`+args+`)`)
		if strings.Contains(plan, "Join Filter:") {
			t.Errorf("%s: the finish joins under a filter:\n%s", what, plan)
		}
		lines := strings.Split(plan, "\n")
		for i, l := range lines {
			if !strings.Contains(l, " on dispatch_tasks ") || strings.Contains(l, "Update on ") {
				continue
			}
			if !strings.Contains(l, "Index Scan using dispatch_tasks_pkey ") || i+1 >= len(lines) || !strings.Contains(lines[i+1], "Index Cond:") {
				t.Errorf("%s: the finish reads the tasks other than by key: %q\n%s", what, strings.TrimSpace(l), plan)
			}
		}
	}
}

// pgStatementPlan prepares stmt as p under plan_cache_mode mode, in a
// transaction rolled back after (setup run first in it), and returns the
// plan explain prints (an EXPLAIN EXECUTE p(...)).
func pgStatementPlan(t *testing.T, d *Dispatcher, mode, stmt, explain string, setup ...string) string {
	t.Helper()
	ctx := testCtx(t)
	conn, err := d.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := conn.Close(); err != nil {
			t.Error(err)
		}
	}()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := tx.Rollback(); err != nil {
			t.Error(err)
		}
	}()
	for _, s := range append(setup, `SET LOCAL plan_cache_mode = `+mode, `PREPARE p AS `+stmt) {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	plan := planLines(t, ctx, tx, explain)
	if _, err := tx.ExecContext(ctx, `DEALLOCATE p`); err != nil {
		t.Fatal(err)
	}
	return plan
}
