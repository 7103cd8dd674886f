package dispatch

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"
)

// A finish whose earlier try committed while its answer was lost is
// answered success when retried, and does nothing twice; a finish from
// another attempt still conflicts.
func TestFinishRetryFindsItsOwnCommit(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		ctx := testCtx(t)
		clk := newFakeClock()
		starts := make(chan Task, 10)
		cfg.Clock = clk
		cfg.Backoff = Backoff{Base: time.Second, Max: time.Second, Jitter: 0.1}
		cfg.OnStart = func(_ context.Context, tk Task) error { starts <- tk; return nil }
		d := open(t, cfg)
		mustWorker(t, d, "w", 2)
		_, err := d.Assign(ctx, Assignment{Worker: "w", Start: clk.Now(), End: clk.Now().Add(time.Hour), Tasks: newTasks("a", "b"), MaxRetries: 1, Timeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		got := map[string]Task{}
		for range 2 {
			tk := recv(t, starts, "start")
			got[tk.ExternalID] = tk
		}
		a := got["a"]

		// The first try commits, and its answer is lost on the way back
		// (the store is called as the finisher does; the caller never sees it).
		errs, err := d.st.finishBatch(ctx, []finishReq{{uuid: a.UUID, attempt: a.Attempt}}, clk.Now())
		if err != nil || errs[0] != nil {
			t.Fatalf("first finish: %v %v", err, errs)
		}
		first, err := d.Task(ctx, a.UUID)
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
		before := d.Stats().Finished
		for try := range 2 {
			if err := d.FinishAttempt(ctx, a.UUID, a.Attempt); err != nil {
				t.Fatalf("retried finish %d of the same attempt: %v", try+1, err)
			}
		}
		if n := d.Stats().Finished - before; n != 0 {
			t.Errorf("the retries counted %d more finishes, want 0", n)
		}
		again, err := d.Task(ctx, a.UUID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(again, first) {
			t.Errorf("the retries changed the task:\nfirst %+v\nafter %+v", first, again)
		}
		g, err := d.Global(ctx)
		if err != nil {
			t.Fatal(err)
		}
		w, err := d.Worker(ctx, "w")
		if err != nil {
			t.Fatal(err)
		}
		if g.Running != 1 || w.Running != 1 {
			t.Errorf("running global %d, worker %d after one of two finished; want 1 and 1 (a slot freed once)", g.Running, w.Running)
		}

		// Another attempt, or a finish naming none, still conflicts.
		if err := d.FinishAttempt(ctx, a.UUID, a.Attempt+1); !errors.Is(err, ErrStaleLease) {
			t.Errorf("finish of another attempt: err = %v, want ErrStaleLease", err)
		}
		if err := d.Finish(ctx, a.UUID); !errors.Is(err, ErrAlreadyFinished) {
			t.Errorf("finish naming no attempt: err = %v, want ErrAlreadyFinished", err)
		}

		// b's attempt 1 times out and attempt 2 runs and finishes; attempt
		// 1's finish stays refused, attempt 2's retry succeeds.
		b := got["b"]
		clk.Advance(30 * time.Second)
		d.sweep(ctx)
		waitStatus(t, d, b.UUID, StatusWaiting)
		clk.Advance(2 * time.Second)
		d.kick()
		b2 := recv(t, starts, "second start of b")
		if b2.UUID != b.UUID || b2.Attempt != 2 {
			t.Fatalf("second start %+v, want b attempt 2", b2)
		}
		if err := d.FinishAttempt(ctx, b.UUID, 2); err != nil {
			t.Fatal(err)
		}
		if err := d.FinishAttempt(ctx, b.UUID, 1); !errors.Is(err, ErrStaleLease) {
			t.Errorf("finish of the timed-out attempt 1: err = %v, want ErrStaleLease", err)
		}
		if err := d.FinishAttempt(ctx, b.UUID, 2); err != nil {
			t.Errorf("retried finish of attempt 2: %v", err)
		}
		if g, err := d.Global(ctx); err != nil || g.Running != 0 {
			t.Errorf("global running %d (%v) with every task finished, want 0", g.Running, err)
		}
		none(t, starts, "a start after both finished")
	})
}
