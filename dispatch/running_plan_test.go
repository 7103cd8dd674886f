package dispatch

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// taskIndexUse finds the indexes of the tasks a plan line reads.
var taskIndexUse = regexp.MustCompile(`(?:using|Index Scan on) (dispatch_tasks_\w+)`)

// The sweeps' statements over running tasks — the look for overdue
// attempts and the timeouts, the look for orphaned tasks and the reap, a
// stopping node's give-back, the check of a node's own attempts — read the
// running tasks from the one index of them (migration 006) or reach tasks
// by key: never the table, never the waiting backlog's index, analyzed or
// not, custom plan or generic. Checked on the plans, beside a backlog of
// 20,000 waiting tasks.
func TestRunningPlansReadRunningIndex(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		if cfg.Driver != "postgres" {
			t.Skip("SQLite keeps the indexes of migration 001")
		}
		ctx := testCtx(t)
		d, now := claimBacklog(t, cfg, 20000)
		if _, err := d.DB().ExecContext(ctx, `INSERT INTO dispatch_nodes (id, expires) VALUES ('n1', $1)`, now.Add(time.Hour).UnixMicro()); err != nil {
			t.Fatal(err)
		}
		c, err := d.st.claim(ctx, "n1", now, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.started) == 0 {
			t.Fatal("the claim started nothing")
		}
		ids := make([]string, len(c.started))
		for i, tk := range c.started {
			ids[i] = "'" + tk.UUID + "'"
		}
		us := now.UnixMicro()
		st := d.st
		stmts := []struct{ name, sql, args string }{
			{"overdue look", st.q(overdueQuery), fmt.Sprint(us)},
			{"timeouts", st.runningQuery(overdueCond), fmt.Sprintf("%d, 500", us)},
			{"orphan look", st.q(reapDueQuery), fmt.Sprint(us)},
			{"reap", st.runningQuery(orphanedCond), "10000"},
			{"give-back", st.runningQuery(leaseCond), "'n1', 1073741824"},
			{"own attempts", st.q(holdingQuery(len(ids))), "'n1', " + strings.Join(ids, ", ")},
		}
		for _, stats := range []string{"without statistics", "analyzed"} {
			if stats == "analyzed" {
				if _, err := d.DB().ExecContext(ctx, `ANALYZE`); err != nil {
					t.Fatal(err)
				}
			}
			for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
				for _, s := range stmts {
					what := fmt.Sprintf("%s, %s, %s", s.name, stats, mode)
					plan := pgStatementPlan(t, d, mode, s.sql, `EXPLAIN EXECUTE p(`+s.args+`)`)
					for _, l := range strings.Split(plan, "\n") {
						if strings.Contains(l, "Seq Scan on dispatch_tasks ") {
							t.Errorf("%s: the tasks are read from the table: %q\n%s", what, strings.TrimSpace(l), plan)
						}
						for _, m := range taskIndexUse.FindAllStringSubmatch(l, -1) {
							if m[1] != "dispatch_tasks_running" && m[1] != "dispatch_tasks_pkey" {
								t.Errorf("%s: the tasks are read through %s, not the running tasks' index or by key\n%s", what, m[1], plan)
							}
						}
					}
				}
			}
		}
	})
}
