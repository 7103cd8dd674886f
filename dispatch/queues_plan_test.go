package dispatch

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// queuesPlan fills a store with ended and live tasks of a few workers, as a
// store kept by the retention looks, and returns the plan the database
// makes for queuesQuery.
func queuesPlan(t *testing.T, cfg Config) string {
	t.Helper()
	ctx := testCtx(t)
	clk := newFakeClock()
	cfg.Clock = clk
	d := open(t, cfg)
	now := clk.Now()
	info := []byte(strings.Repeat("payload ", 40))
	for w := range 4 {
		name := fmt.Sprintf("w%d", w)
		mustWorker(t, d, name, 10)
		ts := make([]NewTask, 5000)
		for i := range ts {
			ts[i] = NewTask{ExternalID: fmt.Sprintf("%s-%d", name, i), Info: info}
		}
		if _, err := d.Assign(ctx, Assignment{Worker: name, Start: now.Add(time.Hour), End: now.Add(2 * time.Hour), Tasks: ts}); err != nil {
			t.Fatal(err)
		}
	}
	// Most of them ended, as in a store whose tasks have mostly run.
	if _, err := d.DB().ExecContext(ctx, `UPDATE dispatch_tasks SET status = 'finished', ended_at = created_at WHERE external_id NOT LIKE '%-1__'`); err != nil {
		t.Fatal(err)
	}
	var explain string
	if cfg.Driver == "postgres" {
		// Twice, as autovacuum would over time: the first pass removes
		// the rows the UPDATE left dead, the second marks their pages
		// all-visible, so that an index-only scan need not visit them.
		for range 2 {
			if _, err := d.DB().ExecContext(ctx, `VACUUM (FREEZE, ANALYZE, DISABLE_PAGE_SKIPPING) dispatch_tasks`); err != nil {
				t.Fatal(err)
			}
		}
		explain = `EXPLAIN `
	} else {
		if _, err := d.DB().ExecContext(ctx, `ANALYZE`); err != nil {
			t.Fatal(err)
		}
		explain = `EXPLAIN QUERY PLAN `
	}
	rows, err := d.DB().QueryContext(ctx, d.st.q(explain+queuesQuery(d.st.d)), micros(now))
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

// Queues reads the tasks through the partial indexes of migration 003 (an
// index-only scan of the live tasks and one of the ended tasks on
// PostgreSQL, both indexes as covering indexes on SQLite), never the task
// rows: a store of 20,000 tasks, most of them ended, as the retention
// keeps it.
func TestQueuesReadIndexesNotRows(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		plan := queuesPlan(t, cfg)
		want := []string{"Index Only Scan using dispatch_tasks_live", "Index Only Scan using dispatch_tasks_ended"}
		table := "Seq Scan on dispatch_tasks"
		if cfg.Driver == "sqlite" {
			want = []string{"SCAN dispatch_tasks USING COVERING INDEX dispatch_tasks_live", "SCAN dispatch_tasks USING COVERING INDEX dispatch_tasks_ended"}
			table = "SCAN dispatch_tasks\n"
		}
		for _, w := range want {
			if !strings.Contains(plan, w) {
				t.Errorf("the plan has no %q:\n%s", w, plan)
			}
		}
		if strings.Contains(plan+"\n", table) {
			t.Errorf("the plan reads the task rows (%q):\n%s", strings.TrimSpace(table), plan)
		}
	})
}
