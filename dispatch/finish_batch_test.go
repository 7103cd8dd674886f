package dispatch

import (
	"context"
	"errors"
	"testing"
	"time"
)

// One batch of finishes with every kind of request in it: two tasks
// finished, one of them asked twice (its attempt, then any attempt), an
// unknown task, a stale attempt. Each request gets its own outcome, each
// finished task frees exactly one slot, and on PostgreSQL a task that
// another transaction holds is finished once that transaction ends, while
// the rest of the batch is recorded without waiting for it.
func TestFinishBatchOutcomes(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		ctx := testCtx(t)
		clk := newFakeClock()
		cfg.Clock = clk
		starts := make(chan Task, 10)
		cfg.OnStart = func(_ context.Context, tk Task) error { starts <- tk; return nil }
		d := open(t, cfg)
		mustWorker(t, d, "w", 5)
		if _, err := d.Assign(ctx, Assignment{Worker: "w", Start: clk.Now(), End: clk.Now().Add(time.Hour),
			Tasks: newTasks("a", "b", "c"), Timeout: time.Hour}); err != nil {
			t.Fatal(err)
		}
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		got := map[string]Task{}
		for range 3 {
			tk := recv(t, starts, "start")
			got[tk.ExternalID] = tk
		}
		a, b, c := got["a"], got["b"], got["c"]

		// On PostgreSQL, c is held by another transaction for a while.
		var release func()
		if cfg.Driver == "postgres" {
			tx, err := d.DB().BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var st string
			if err := tx.QueryRowContext(ctx, `SELECT status FROM dispatch_tasks WHERE uuid = $1 FOR UPDATE`, c.UUID).Scan(&st); err != nil {
				t.Fatal(err)
			}
			release = func() {
				if err := tx.Commit(); err != nil {
					t.Error(err)
				}
			}
		}

		reqs := []finishReq{
			{uuid: a.UUID, attempt: a.Attempt},
			{uuid: a.UUID, attempt: 0},
			{uuid: "no-such-task", attempt: 1},
			{uuid: b.UUID, attempt: b.Attempt + 1},
			{uuid: c.UUID, attempt: c.Attempt},
		}
		type result struct {
			errs []error
			err  error
		}
		done := make(chan result, 1)
		go func() {
			errs, err := d.st.finishBatch(ctx, reqs, clk.Now())
			done <- result{errs, err}
		}()
		if release != nil {
			// a is finished while c is still held: the batch did not wait.
			waitStatus(t, d, a.UUID, StatusFinished)
			if tk, err := d.Task(ctx, c.UUID); err != nil || tk.Status != StatusRunning {
				t.Fatalf("held task c: %v %v, want running until its holder ends", tk.Status, err)
			}
			release()
		}
		var r result
		select {
		case r = <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the batch did not end within 30s")
		}
		if r.err != nil {
			t.Fatal(r.err)
		}
		want := []error{nil, ErrAlreadyFinished, ErrUnknownTask, ErrStaleLease, nil}
		for i, w := range want {
			if w == nil && r.errs[i] != nil || w != nil && !errors.Is(r.errs[i], w) {
				t.Errorf("request %d: %v, want %v", i, r.errs[i], w)
			}
		}
		for _, id := range []string{a.UUID, c.UUID} {
			if tk, err := d.Task(ctx, id); err != nil || tk.Status != StatusFinished {
				t.Errorf("task %s: %v %v, want finished", id, tk.Status, err)
			}
		}
		if tk, err := d.Task(ctx, b.UUID); err != nil || tk.Status != StatusRunning {
			t.Errorf("task b: %v %v, want still running", tk.Status, err)
		}
		w, err := d.Worker(ctx, "w")
		if err != nil {
			t.Fatal(err)
		}
		if w.Running != 1 {
			t.Errorf("worker running = %d after two finishes of three, want 1", w.Running)
		}
		g, err := d.Global(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if g.Running != 1 {
			t.Errorf("global running = %d, want 1", g.Running)
		}
	})
}
