package dispatch

import (
	"context"
	"maps"
	"testing"
	"time"
)

// TestQueuesCountTasksByWorkerAndState: Queues counts every worker's tasks
// by status, the due ones among the waiting, the late starts, and the
// running count against the cap, as tasks are assigned, cancelled,
// started late, failed late and finished.
func TestQueuesCountTasksByWorkerAndState(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		ctx := testCtx(t)
		clk := newFakeClock()
		started := make(chan Task, 10)
		failed := make(chan Task, 10)
		cfg.Clock = clk
		cfg.OnStart = func(_ context.Context, tk Task) error { started <- tk; return nil }
		cfg.OnFail = func(_ context.Context, tk Task) { failed <- tk }
		d := open(t, cfg)
		mustWorker(t, d, "a", 2)
		mustWorker(t, d, "idle", 0)
		if err := d.PutWorker(ctx, Worker{Name: "strict", MaxRunning: 5, LatePolicy: LateFail}); err != nil {
			t.Fatal(err)
		}
		now := clk.Now()
		due, err := d.Assign(ctx, Assignment{Worker: "a", Start: now, End: now.Add(time.Minute), Tasks: newTasks("a1", "a2", "a3", "a4")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Assign(ctx, Assignment{Worker: "a", Start: now.Add(time.Hour), End: now.Add(2 * time.Hour), Tasks: newTasks("later1", "later2")}); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Assign(ctx, Assignment{Worker: "strict", Start: now, End: now.Add(time.Minute), Tasks: newTasks("s1")}); err != nil {
			t.Fatal(err)
		}
		if err := d.Cancel(ctx, due[3].UUID); err != nil {
			t.Fatal(err)
		}

		type counts struct {
			maxRunning, running, due, late int
			tasks                          map[Status]int
		}
		tasks := func(waiting, running, finished, failed, cancelled int) map[Status]int {
			return map[Status]int{StatusWaiting: waiting, StatusRunning: running, StatusFinished: finished, StatusFailed: failed, StatusCancelled: cancelled}
		}
		check := func(when string, want map[string]counts) {
			t.Helper()
			qs, err := d.Queues(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, q := range qs {
				names = append(names, q.Worker)
				w, ok := want[q.Worker]
				if !ok {
					continue
				}
				got := counts{maxRunning: q.MaxRunning, running: q.Running, due: q.Due, late: q.Late, tasks: q.Tasks}
				if got.maxRunning != w.maxRunning || got.running != w.running || got.due != w.due || got.late != w.late || !maps.Equal(got.tasks, w.tasks) {
					t.Errorf("%s: worker %s: %+v, want %+v", when, q.Worker, got, w)
				}
			}
			if len(names) != 3 || names[0] != "a" || names[1] != "idle" || names[2] != "strict" {
				t.Errorf("%s: workers %v, want [a idle strict]", when, names)
			}
		}

		check("before any start", map[string]counts{
			"a":      {maxRunning: 2, due: 3, tasks: tasks(5, 0, 0, 0, 1)},
			"idle":   {tasks: tasks(0, 0, 0, 0, 0)},
			"strict": {maxRunning: 5, due: 1, tasks: tasks(1, 0, 0, 0, 0)},
		})

		// Two minutes on, every due task is past its acceptable start: a's
		// start late (two, its cap), strict's fails late.
		clk.Advance(2 * time.Minute)
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		first := recv(t, started, "a start")
		recv(t, started, "a's second start")
		if f := recv(t, failed, "strict's late fail"); f.Worker != "strict" {
			t.Fatalf("failed %+v, want strict's task", f)
		}
		check("two started at the cap", map[string]counts{
			"a":      {maxRunning: 2, running: 2, due: 1, late: 2, tasks: tasks(3, 2, 0, 0, 1)},
			"idle":   {tasks: tasks(0, 0, 0, 0, 0)},
			"strict": {maxRunning: 5, late: 1, tasks: tasks(0, 0, 0, 1, 0)},
		})

		// A finish frees a slot; the last due task takes it.
		if err := d.Finish(ctx, first.UUID); err != nil {
			t.Fatal(err)
		}
		recv(t, started, "a's third start")
		check("one finished, the third started", map[string]counts{
			"a":      {maxRunning: 2, running: 2, late: 3, tasks: tasks(2, 2, 1, 0, 1)},
			"idle":   {tasks: tasks(0, 0, 0, 0, 0)},
			"strict": {maxRunning: 5, late: 1, tasks: tasks(0, 0, 0, 1, 0)},
		})
		none(t, started, "a start over a's cap")
	})
}
