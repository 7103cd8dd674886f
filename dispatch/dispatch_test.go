package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"
)

func TestAssignSpreadsTasksOverTheWindow(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		ctx := testCtx(t)
		clk := newFakeClock()
		cfg.Clock = clk
		d := open(t, cfg)
		mustWorker(t, d, "reports", 10)
		start := clk.Now().Add(time.Hour)
		end := start.Add(time.Hour)
		got, err := d.Assign(ctx, Assignment{Worker: "reports", Start: start, End: end, Tasks: newTasks("a", "b", "c", "d", "e"), MaxRetries: 2, Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 5 {
			t.Fatalf("got %d tasks, want 5", len(got))
		}
		for i, tk := range got {
			want := start.Add(time.Duration(i+1) * 12 * time.Minute)
			if !tk.ExpectedStart.Equal(start) || !tk.AcceptableStart.Equal(want) {
				t.Errorf("task %d: expected %s acceptable %s, want %s and %s", i, tk.ExpectedStart, tk.AcceptableStart, start, want)
			}
			stored, err := d.Task(ctx, tk.UUID)
			if err != nil {
				t.Fatal(err)
			}
			if stored.Status != StatusWaiting || !stored.AcceptableStart.Equal(want) || string(stored.Info) != "info-"+tk.ExternalID ||
				stored.MaxRetries != 2 || stored.Timeout != time.Minute || stored.Worker != "reports" {
				t.Errorf("task %d stored as %+v", i, stored)
			}
		}

		// The same external ids again: the same tasks, nothing added.
		again, err := d.Assign(ctx, Assignment{Worker: "reports", Start: start.Add(time.Minute), End: end.Add(time.Hour), Tasks: newTasks("c", "a", "new")})
		if err != nil {
			t.Fatal(err)
		}
		if again[0].UUID != got[2].UUID || again[1].UUID != got[0].UUID || again[2].UUID == got[0].UUID {
			t.Errorf("re-assign returned %s %s %s, want %s %s and a new uuid", again[0].UUID, again[1].UUID, again[2].UUID, got[2].UUID, got[0].UUID)
		}
		if !again[0].AcceptableStart.Equal(got[2].AcceptableStart) {
			t.Errorf("re-assign changed the existing task's window: %s, was %s", again[0].AcceptableStart, got[2].AcceptableStart)
		}
		all, err := d.Tasks(ctx, Filter{Worker: "reports"})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 6 {
			t.Errorf("worker holds %d tasks, want 6", len(all))
		}
	})
}

func TestSpread(t *testing.T) {
	s := time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC)
	got := Spread(s, s.Add(time.Hour), 4)
	want := []time.Duration{15 * time.Minute, 30 * time.Minute, 45 * time.Minute, time.Hour}
	for i := range want {
		if !got[i].Equal(s.Add(want[i])) {
			t.Errorf("point %d = %s, want %s", i, got[i], s.Add(want[i]))
		}
	}
	if one := Spread(s, s.Add(time.Hour), 1); !one[0].Equal(s.Add(time.Hour)) {
		t.Errorf("one task's acceptable start = %s, want the window's end", one[0])
	}
}

// counts returns the number of tasks, the global row and every worker, to
// show a rejected call changed nothing.
func snapshot(t *testing.T, d *Dispatcher) string {
	t.Helper()
	ctx := testCtx(t)
	g, err := d.Global(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := d.Workers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := d.Tasks(ctx, Filter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var st []string
	for _, tk := range ts {
		st = append(st, tk.UUID+":"+string(tk.Status))
	}
	return fmt.Sprintf("%+v %+v %v", g, ws, st)
}

func TestBadInputIsRejectedAndChangesNothing(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		ctx := testCtx(t)
		clk := newFakeClock()
		cfg.Clock = clk
		d := open(t, cfg)
		mustWorker(t, d, "w", 2)
		now := clk.Now()
		tasks, err := d.Assign(ctx, Assignment{Worker: "w", Start: now.Add(time.Hour), End: now.Add(2 * time.Hour), Tasks: newTasks("x")})
		if err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, d)
		cases := []struct {
			name string
			call func() error
			want error
		}{
			{"end before start", func() error {
				_, err := d.Assign(ctx, Assignment{Worker: "w", Start: now, End: now.Add(-time.Second), Tasks: newTasks("y")})
				return err
			}, ErrInvalid},
			{"end equals start", func() error {
				_, err := d.Assign(ctx, Assignment{Worker: "w", Start: now, End: now, Tasks: newTasks("y")})
				return err
			}, ErrInvalid},
			{"empty batch", func() error {
				_, err := d.Assign(ctx, Assignment{Worker: "w", Start: now, End: now.Add(time.Hour)})
				return err
			}, ErrInvalid},
			{"duplicate external id in a batch", func() error {
				_, err := d.Assign(ctx, Assignment{Worker: "w", Start: now, End: now.Add(time.Hour), Tasks: newTasks("y", "y")})
				return err
			}, ErrInvalid},
			{"negative retries", func() error {
				_, err := d.Assign(ctx, Assignment{Worker: "w", Start: now, End: now.Add(time.Hour), Tasks: newTasks("y"), MaxRetries: -1})
				return err
			}, ErrInvalid},
			{"unknown worker", func() error {
				_, err := d.Assign(ctx, Assignment{Worker: "nobody", Start: now, End: now.Add(time.Hour), Tasks: newTasks("y")})
				return err
			}, ErrUnknownWorker},
			{"negative global cap", func() error { return d.SetGlobalMax(ctx, -1) }, ErrInvalid},
			{"negative worker cap", func() error { return d.PutWorker(ctx, Worker{Name: "w", MaxRunning: -3}) }, ErrInvalid},
			{"worker without a name", func() error { return d.PutWorker(ctx, Worker{MaxRunning: 3}) }, ErrInvalid},
			{"bad late policy", func() error { return d.PutWorker(ctx, Worker{Name: "w", MaxRunning: 3, LatePolicy: "maybe"}) }, ErrInvalid},
			{"bad webhook", func() error { return d.PutWorker(ctx, Worker{Name: "w", MaxRunning: 3, WebhookURL: "ftp:/x"}) }, ErrInvalid},
			{"unknown worker read", func() error { _, err := d.Worker(ctx, "nobody"); return err }, ErrUnknownWorker},
			{"unknown task", func() error { return d.Finish(ctx, "no-such-uuid") }, ErrUnknownTask},
			{"unknown task cancel", func() error { return d.Cancel(ctx, "no-such-uuid") }, ErrUnknownTask},
			{"unknown task read", func() error { _, err := d.Task(ctx, "no-such-uuid"); return err }, ErrUnknownTask},
			{"finish a waiting task", func() error { return d.Finish(ctx, tasks[0].UUID) }, ErrNotRunning},
			{"bad filter", func() error { _, err := d.Tasks(ctx, Filter{Status: "sleeping"}); return err }, ErrInvalid},
		}
		for _, c := range cases {
			err := c.call()
			if !errors.Is(err, c.want) {
				t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
			}
		}
		if after := snapshot(t, d); after != before {
			t.Errorf("rejected calls changed the store:\nbefore %s\nafter  %s", before, after)
		}
	})
}

// TestEarliestAcceptableStartFirst: with one global slot, tasks of two
// workers start strictly by acceptable start, then expected start.
func TestEarliestAcceptableStartFirst(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		ctx := testCtx(t)
		clk := newFakeClock()
		order := make(chan string, 100)
		cfg.Clock = clk
		cfg.FinishOnReturn = true
		cfg.OnStart = func(ctx context.Context, tk Task) error { order <- tk.ExternalID; return nil }
		d := open(t, cfg)
		if err := d.SetGlobalMax(ctx, 1); err != nil {
			t.Fatal(err)
		}
		mustWorker(t, d, "a", 5)
		mustWorker(t, d, "b", 5)
		base := clk.Now()
		// a: a1..a4 acceptable at +15, +30, +45, +60 min from base.
		// b: b1..b3 at +10+20k min: +30, +50, +70, expected start later.
		if _, err := d.Assign(ctx, Assignment{Worker: "a", Start: base, End: base.Add(time.Hour), Tasks: newTasks("a1", "a2", "a3", "a4")}); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Assign(ctx, Assignment{Worker: "b", Start: base.Add(10 * time.Minute), End: base.Add(70 * time.Minute), Tasks: newTasks("b1", "b2", "b3")}); err != nil {
			t.Fatal(err)
		}
		clk.Advance(11 * time.Minute) // every task may start
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		// a2 and b1 share +30 min: a2 expected earlier (base) goes first.
		want := []string{"a1", "a2", "b1", "a3", "b2", "a4", "b3"}
		for i, w := range want {
			if got := recv(t, order, "start"); got != w {
				t.Fatalf("start %d is %s, want %s (order %v)", i, got, w, want)
			}
		}
	})
}

// TestNotBeforeExpectedStart: a task does not start until the clock
// reaches its expected start, then it does without a poll interval.
func TestNotBeforeExpectedStart(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		ctx := testCtx(t)
		clk := newFakeClock()
		started := make(chan Task, 10)
		workCtx := make(chan context.Context, 10)
		cfg.Clock = clk
		cfg.OnStart = func(ctx context.Context, tk Task) error { workCtx <- ctx; started <- tk; return nil }
		d := open(t, cfg)
		mustWorker(t, d, "w", 5)
		tasks, err := d.Assign(ctx, Assignment{Worker: "w", Start: clk.Now().Add(time.Minute), End: clk.Now().Add(2 * time.Minute), Tasks: newTasks("t")})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := d.claimRound(ctx); err != nil { // a round now finds nothing startable
			t.Fatal(err)
		}
		none(t, started, "start before the expected start")
		clk.Advance(time.Minute)
		d.kick()
		tk := recv(t, started, "start")
		if tk.UUID != tasks[0].UUID || tk.Attempt != 1 || tk.Late {
			t.Errorf("started %+v", tk)
		}
		wctx := recv(t, workCtx, "handler context")
		waitStatus(t, d, tk.UUID, StatusRunning)
		if err := wctx.Err(); err != nil {
			t.Fatalf("the work's context ended (%v) when the listener returned, before Finish", err)
		}
		if err := d.Finish(ctx, tk.UUID); err != nil {
			t.Fatal(err)
		}
		recv(t, wctx.Done(), "end of the work's context after Finish")
		if err := d.Finish(ctx, tk.UUID); !errors.Is(err, ErrAlreadyFinished) {
			t.Errorf("second finish: err = %v, want ErrAlreadyFinished", err)
		}
		g, err := d.Global(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if g.Running != 0 {
			t.Errorf("global running = %d after finish, want 0", g.Running)
		}
	})
}

// TestCapsHeldAcrossNodes runs three dispatchers on one database and
// checks, inside the handlers, that no worker ever has more running than
// its cap and the whole never more than the global cap.
func TestCapsHeldAcrossNodes(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		ctx := testCtx(t)
		caps := map[string]int{"a": 2, "b": 3, "c": 5}
		const global = 7
		const perWorker = 60
		var mu sync.Mutex
		running := map[string]int{}
		total, peakTotal := 0, 0
		peak := map[string]int{}
		var violations []string
		done := make(chan string, 3*perWorker)
		cfg.FinishOnReturn = true
		cfg.MaxOpenConns = 4
		cfg.OnStart = func(ctx context.Context, tk Task) error {
			mu.Lock()
			running[tk.Worker]++
			total++
			if running[tk.Worker] > caps[tk.Worker] || total > global {
				violations = append(violations, fmt.Sprintf("%s: %d running (cap %d), %d in all (cap %d)", tk.Worker, running[tk.Worker], caps[tk.Worker], total, global))
			}
			peak[tk.Worker] = max(peak[tk.Worker], running[tk.Worker])
			peakTotal = max(peakTotal, total)
			mu.Unlock()
			time.Sleep(time.Millisecond) // let the others pile up against the caps
			mu.Lock()
			running[tk.Worker]--
			total--
			mu.Unlock()
			done <- tk.UUID
			return nil
		}
		var nodes []*Dispatcher
		for i := range 3 {
			c := cfg
			c.NodeID = fmt.Sprintf("node%d", i)
			nodes = append(nodes, open(t, c))
		}
		d := nodes[0]
		if err := d.SetGlobalMax(ctx, global); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		for w, c := range caps {
			mustWorker(t, d, w, c)
			var ids []string
			for i := range perWorker {
				ids = append(ids, fmt.Sprintf("%s-%d", w, i))
			}
			if _, err := d.Assign(ctx, Assignment{Worker: w, Start: now.Add(-time.Minute), End: now.Add(time.Minute), Tasks: newTasks(ids...)}); err != nil {
				t.Fatal(err)
			}
		}
		for _, n := range nodes {
			if err := n.Start(ctx); err != nil {
				t.Fatal(err)
			}
		}
		seen := map[string]bool{}
		for range 3 * perWorker {
			seen[recv(t, done, "finished task")] = true
		}
		if len(seen) != 3*perWorker {
			t.Errorf("%d distinct tasks ran, want %d", len(seen), 3*perWorker)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(violations) > 0 {
			t.Fatalf("caps exceeded %d times, first: %s", len(violations), violations[0])
		}
		t.Logf("peak running: %v, in all %d", peak, peakTotal)
		for _, tk := range waitAll(t, d, 3*perWorker, StatusFinished) {
			if tk.Attempt != 1 {
				t.Errorf("task %s ran %d times", tk.ExternalID, tk.Attempt)
			}
		}
	})
}

// waitAll waits until n tasks have the status and returns them.
func waitAll(t *testing.T, d *Dispatcher, n int, st Status) []Task {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var all []Task
		after := ""
		for {
			ts, err := d.Tasks(testCtx(t), Filter{Status: st, After: after, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, ts...)
			if len(ts) < 1000 {
				break
			}
			after = ts[len(ts)-1].UUID
		}
		if len(all) >= n {
			return all
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d tasks %s after 30s, want %d", len(all), st, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTimeoutNotifiesRetriesThenFails: an attempt that is not finished in
// time is timed out (listener), its slots are freed, it is retried after
// the backoff, and once retries are spent the fail listener runs once.
func TestTimeoutNotifiesRetriesThenFails(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		ctx := testCtx(t)
		clk := newFakeClock()
		starts := make(chan Task, 10)
		timeouts := make(chan Task, 10)
		fails := make(chan Task, 10)
		cfg.Clock = clk
		cfg.Backoff = Backoff{Base: 10 * time.Second, Max: time.Minute, Jitter: 0.1}
		cfg.OnStart = func(ctx context.Context, tk Task) error { starts <- tk; return nil } // never finishes
		cfg.OnTimeout = func(_ context.Context, tk Task) { timeouts <- tk }
		cfg.OnFail = func(_ context.Context, tk Task) { fails <- tk }
		d := open(t, cfg)
		mustWorker(t, d, "w", 1)
		tasks, err := d.Assign(ctx, Assignment{Worker: "w", Start: clk.Now(), End: clk.Now().Add(time.Hour), Tasks: newTasks("t"), MaxRetries: 2, Timeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		for attempt := 1; attempt <= 3; attempt++ {
			tk := recv(t, starts, "start")
			if tk.Attempt != attempt || tk.UUID != tasks[0].UUID {
				t.Fatalf("start %+v, want attempt %d", tk, attempt)
			}
			clk.Advance(29 * time.Second)
			d.sweep(ctx)
			none(t, timeouts, "timeout before the deadline")
			clk.Advance(time.Second)
			d.sweep(ctx)
			to := recv(t, timeouts, "timeout notice")
			if to.Attempt != attempt {
				t.Errorf("timeout notice for attempt %d, want %d", to.Attempt, attempt)
			}
			w, err := d.Worker(ctx, "w")
			if err != nil {
				t.Fatal(err)
			}
			if w.Running != 0 {
				t.Errorf("worker running = %d after the timeout, want 0 (slot freed)", w.Running)
			}
			if err := d.FinishAttempt(ctx, tk.UUID, attempt); !errors.Is(err, ErrStaleLease) {
				t.Errorf("finish of the timed-out attempt: err = %v, want ErrStaleLease", err)
			}
			if attempt < 3 {
				got := waitStatus(t, d, tk.UUID, StatusWaiting)
				backoff := got.RunAt.Sub(clk.Now())
				want := cfg.Backoff.Base << (attempt - 1)
				if backoff < want*9/10 || backoff > want*11/10 {
					t.Errorf("retry %d after %s, want %s ± 10%%", attempt, backoff, want)
				}
				clk.Advance(backoff)
				d.kick()
			}
		}
		f := recv(t, fails, "fail notice")
		if f.Status != StatusFailed || f.Attempt != 3 {
			t.Errorf("fail notice %+v", f)
		}
		waitStatus(t, d, tasks[0].UUID, StatusFailed)
		clk.Advance(time.Hour)
		d.sweep(ctx)
		none(t, fails, "second fail notice")
		none(t, starts, "start after failing")
	})
}

func TestHandlerErrorRetries(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		ctx := testCtx(t)
		clk := newFakeClock()
		starts := make(chan Task, 10)
		cfg.Clock = clk
		cfg.FinishOnReturn = true
		cfg.OnStart = func(ctx context.Context, tk Task) error {
			starts <- tk
			if tk.Attempt == 1 {
				return errors.New("flaky")
			}
			return nil
		}
		d := open(t, cfg)
		mustWorker(t, d, "w", 1)
		tasks, err := d.Assign(ctx, Assignment{Worker: "w", Start: clk.Now(), End: clk.Now().Add(time.Hour), Tasks: newTasks("t"), MaxRetries: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		recv(t, starts, "first start")
		w := waitStatus(t, d, tasks[0].UUID, StatusWaiting)
		if w.LastError != "start listener: flaky" {
			t.Errorf("last error %q", w.LastError)
		}
		clk.Advance(w.RunAt.Sub(clk.Now()))
		d.kick()
		if tk := recv(t, starts, "retry"); tk.Attempt != 2 {
			t.Errorf("retry attempt %d, want 2", tk.Attempt)
		}
		waitStatus(t, d, tasks[0].UUID, StatusFinished)
	})
}

func TestCancel(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		ctx := testCtx(t)
		clk := newFakeClock()
		started := make(chan Task, 10)
		ended := make(chan error, 10)
		cfg.Clock = clk
		cfg.OnStart = func(hctx context.Context, tk Task) error {
			started <- tk
			<-hctx.Done()
			ended <- hctx.Err()
			return nil
		}
		d := open(t, cfg)
		mustWorker(t, d, "w", 1)
		ts, err := d.Assign(ctx, Assignment{Worker: "w", Start: clk.Now(), End: clk.Now().Add(time.Hour), Tasks: newTasks("run", "wait")})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Cancel(ctx, ts[1].UUID); err != nil { // waiting: never starts
			t.Fatal(err)
		}
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		tk := recv(t, started, "start")
		if tk.UUID != ts[0].UUID {
			t.Fatalf("started %s, want %s", tk.ExternalID, "run")
		}
		if err := d.Cancel(ctx, tk.UUID); err != nil {
			t.Fatal(err)
		}
		if err := recv(t, ended, "handler end"); !errors.Is(err, context.Canceled) {
			t.Errorf("handler context ended with %v, want Canceled", err)
		}
		if err := d.Cancel(ctx, tk.UUID); !errors.Is(err, ErrFinal) {
			t.Errorf("second cancel: %v, want ErrFinal", err)
		}
		if err := d.Finish(ctx, tk.UUID); !errors.Is(err, ErrNotRunning) {
			t.Errorf("finish after cancel: %v, want ErrNotRunning", err)
		}
		w, err := d.Worker(ctx, "w")
		if err != nil {
			t.Fatal(err)
		}
		if w.Running != 0 {
			t.Errorf("worker running = %d after cancel, want 0", w.Running)
		}
		for _, u := range []string{ts[0].UUID, ts[1].UUID} {
			if got, _ := d.Task(ctx, u); got.Status != StatusCancelled {
				t.Errorf("task %s is %s, want cancelled", got.ExternalID, got.Status)
			}
		}
		none(t, started, "start of a cancelled task")
	})
}

func TestLatePolicy(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		ctx := testCtx(t)
		clk := newFakeClock()
		started := make(chan Task, 10)
		fails := make(chan Task, 10)
		cfg.Clock = clk
		cfg.OnStart = func(ctx context.Context, tk Task) error { started <- tk; return nil }
		cfg.OnFail = func(_ context.Context, tk Task) { fails <- tk }
		d := open(t, cfg)
		mustWorker(t, d, "lenient", 5)
		if err := d.PutWorker(ctx, Worker{Name: "strict", MaxRunning: 5, LatePolicy: LateFail}); err != nil {
			t.Fatal(err)
		}
		start := clk.Now()
		for _, w := range []string{"lenient", "strict"} {
			if _, err := d.Assign(ctx, Assignment{Worker: w, Start: start, End: start.Add(time.Minute), Tasks: newTasks(w)}); err != nil {
				t.Fatal(err)
			}
		}
		clk.Advance(2 * time.Minute) // both past their acceptable start
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		tk := recv(t, started, "late start")
		if tk.Worker != "lenient" || !tk.Late {
			t.Errorf("started %+v, want lenient's task, late", tk)
		}
		f := recv(t, fails, "late fail")
		if f.Worker != "strict" || f.Status != StatusFailed || !f.Late {
			t.Errorf("failed %+v, want strict's task, late", f)
		}
		none(t, started, "start of the strict worker's late task")
		if s := d.Stats(); s.Late != 1 || s.LateFailed != 1 {
			t.Errorf("stats %+v, want one late start and one late fail", s)
		}
	})
}

// TestLeaseExpiryFreesTasksAndRejectsStaleFinish: node A stops renewing
// (its clock stands still, as if frozen or cut off); once its lease lapses
// on node B's clock, B frees A's task, retries it, and A's late Finish is
// rejected; A learns its lease is gone and cancels its handler.
func TestLeaseExpiryFreesTasksAndRejectsStaleFinish(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		ctx := testCtx(t)
		clkA, clkB := newFakeClock(), newFakeClock()
		startedA, startedB := make(chan Task, 10), make(chan Task, 10)
		endedA := make(chan error, 1)
		cfg.LeaseTTL = 10 * time.Second
		cfg.SweepInterval = time.Second
		cfg.Backoff = Backoff{Base: time.Second, Max: time.Second, Jitter: 0.01}
		cfg.MaxOpenConns = 2
		ca, cb := cfg, cfg
		// A's own sweeper, on a real ticker, must not run during the test:
		// it would renew (or re-register) A's lease on A's fake clock at
		// a moment the test does not choose. A sweeps only when told.
		ca.LeaseTTL, ca.SweepInterval = time.Hour, 20*time.Minute
		ca.Clock, ca.NodeID = clkA, "A"
		ca.OnStart = func(hctx context.Context, tk Task) error {
			startedA <- tk
			<-hctx.Done()
			endedA <- hctx.Err()
			return nil
		}
		cb.Clock, cb.NodeID = clkB, "B"
		cb.OnStart = func(ctx context.Context, tk Task) error { startedB <- tk; return nil }
		a := open(t, ca)
		mustWorker(t, a, "w", 1)
		ts, err := a.Assign(ctx, Assignment{Worker: "w", Start: clkA.Now(), End: clkA.Now().Add(time.Hour), Tasks: newTasks("t"), MaxRetries: 3, Timeout: 24 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Start(ctx); err != nil {
			t.Fatal(err)
		}
		tk := recv(t, startedA, "start on A")
		b := open(t, cb)
		if err := b.Start(ctx); err != nil {
			t.Fatal(err)
		}
		// Within A's lease, B frees nothing and cannot start the task: the
		// worker's one slot is A's.
		clkB.Advance(59 * time.Minute)
		b.sweep(ctx)
		b.kick()
		if got, _ := b.Task(ctx, tk.UUID); got.Status != StatusRunning || got.Node != a.Node() {
			t.Fatalf("task is %s on %q within A's lease, want running on %q", got.Status, got.Node, a.Node())
		}
		clkB.Advance(2 * time.Minute) // A's lease has lapsed for B
		b.sweep(ctx)
		clkA.Advance(61 * time.Minute) // the nodes' clocks agree again
		if s := b.Stats(); s.Reaped != 1 {
			t.Fatalf("B reaped %d tasks, want 1", s.Reaped)
		}
		clkB.Advance(2 * time.Second) // past the retry's backoff
		b.kick()
		tb := recv(t, startedB, "restart on B")
		if tb.UUID != ts[0].UUID || tb.Attempt != 2 || tb.Node != b.Node() {
			t.Errorf("B started %+v, want attempt 2 on %s", tb, b.Node())
		}
		if err := a.FinishAttempt(ctx, tk.UUID, tk.Attempt); !errors.Is(err, ErrStaleLease) {
			t.Errorf("A's finish of attempt 1: err = %v, want ErrStaleLease", err)
		}
		// A's next sweep finds its lease gone: its handler is cancelled.
		clkA.Advance(2 * time.Second)
		a.sweep(ctx)
		if err := recv(t, endedA, "A's handler end"); !errors.Is(err, context.Canceled) {
			t.Errorf("A's handler context: %v, want Canceled", err)
		}
		if s := a.Stats(); s.LeaseLost != 1 {
			t.Errorf("A lost its lease %d times, want 1", s.LeaseLost)
		}
		if err := b.FinishAttempt(ctx, tb.UUID, tb.Attempt); err != nil {
			t.Fatal(err)
		}
		if g, _ := b.Global(ctx); g.Running != 0 {
			t.Errorf("global running %d at the end, want 0", g.Running)
		}
	})
}

// TestRestartLosesNothing: a node closes with tasks waiting and running,
// a new one opens on the same database and every task finishes.
func TestRestartLosesNothing(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		ctx := testCtx(t)
		first := make(chan Task, 100)
		c1 := cfg
		c1.OnStart = func(ctx context.Context, tk Task) error { first <- tk; return nil } // leaves them running
		d1, err := Open(ctx, c1)
		if err != nil {
			t.Fatal(err)
		}
		mustWorker(t, d1, "w", 3)
		var ids []string
		for i := range 20 {
			ids = append(ids, fmt.Sprint(i))
		}
		now := time.Now()
		if _, err := d1.Assign(ctx, Assignment{Worker: "w", Start: now.Add(-time.Second), End: now.Add(time.Hour), Tasks: newTasks(ids...)}); err != nil {
			t.Fatal(err)
		}
		if err := d1.Start(ctx); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			recv(t, first, "start before the restart")
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := d1.Close(cctx); err != nil {
			t.Fatal(err)
		}
		c2 := cfg
		c2.FinishOnReturn = true
		var mu sync.Mutex
		ran := map[string]int{}
		c2.OnStart = func(ctx context.Context, tk Task) error {
			mu.Lock()
			ran[tk.ExternalID]++
			mu.Unlock()
			return nil
		}
		d2 := open(t, c2)
		if w, err := d2.Worker(ctx, "w"); err != nil || w.Running != 0 {
			t.Fatalf("after the restart worker = %+v, %v; want nothing running", w, err)
		}
		if err := d2.Start(ctx); err != nil {
			t.Fatal(err)
		}
		fin := waitAll(t, d2, 20, StatusFinished)
		var got []string
		for _, tk := range fin {
			got = append(got, tk.ExternalID)
			if tk.Attempt != 1 {
				t.Errorf("task %s: attempt %d, want 1 (a given-back attempt is not counted)", tk.ExternalID, tk.Attempt)
			}
		}
		sort.Strings(got)
		sort.Strings(ids)
		if fmt.Sprint(got) != fmt.Sprint(ids) {
			t.Errorf("finished %v, want %v", got, ids)
		}
	})
}

// TestCancelFromAnotherProcessReachesTheHandler: a task cancelled through
// a client-only dispatcher (another process) has its handler's context
// ended by the node's next sweep.
func TestCancelFromAnotherProcessReachesTheHandler(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		ctx := testCtx(t)
		started := make(chan Task, 1)
		ended := make(chan error, 1)
		node := cfg
		node.OnStart = func(hctx context.Context, tk Task) error {
			started <- tk
			<-hctx.Done()
			ended <- hctx.Err()
			return nil
		}
		if cfg.Driver == "sqlite" {
			node.MaxOpenConns = 2
		}
		d := open(t, node)
		client := open(t, cfg)
		mustWorker(t, client, "w", 1)
		ts, err := client.Assign(ctx, Assignment{Worker: "w", Start: time.Now().Add(-time.Second), End: time.Now().Add(time.Hour), Tasks: newTasks("t")})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		recv(t, started, "start")
		if err := client.Cancel(ctx, ts[0].UUID); err != nil {
			t.Fatal(err)
		}
		d.sweep(ctx)
		if err := recv(t, ended, "handler end"); !errors.Is(err, context.Canceled) {
			t.Errorf("handler context: %v, want Canceled", err)
		}
	})
}
