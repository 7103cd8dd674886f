package dispatch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Bad retention settings are refused by Open with ErrInvalid and a message
// naming the field, before anything is created; zero values get the
// defaults.
func TestRetentionConfig(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"negative MaxAge", Config{MaxAge: -time.Second}, "MaxAge -1s must not be negative"},
		{"negative MaxRows", Config{MaxRows: -1}, "MaxRows -1 must not be negative"},
		{"negative RetentionInterval", Config{RetentionInterval: -time.Minute}, "RetentionInterval -1m0s must not be negative"},
		{"negative RetentionBatch", Config{RetentionBatch: -5}, "RetentionBatch -5 must be from 1 to 100000"},
		{"RetentionBatch over the limit", Config{RetentionBatch: MaxRetentionBatch + 1}, "RetentionBatch 100001 must be from 1 to 100000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "d.db")
			c.cfg.DSN = path
			d, err := Open(testCtx(t), c.cfg)
			if err == nil {
				_ = d.Close(testCtx(t))
				t.Fatal("Open accepted it")
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrInvalid saying %q", err, c.want)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the refused Open left a database behind: %v", err)
			}
		})
	}
	d := open(t, Config{DSN: filepath.Join(t.TempDir(), "d.db")})
	if c := d.cfg; c.MaxAge != DefaultMaxAge || c.MaxRows != DefaultMaxRows || c.RetentionInterval != DefaultRetentionInterval || c.RetentionBatch != DefaultRetentionBatch {
		t.Errorf("defaults: MaxAge %v, MaxRows %d, RetentionInterval %v, RetentionBatch %d", c.MaxAge, c.MaxRows, c.RetentionInterval, c.RetentionBatch)
	}
}

// A prune deletes the ended tasks (finished, cancelled) past MaxAge and
// leaves every live one, however old and whatever MaxRows says: a running
// task, one waiting for its start, and one waiting for a retry after a
// failed attempt.
func TestPruneKeepsLiveTasks(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		ctx := testCtx(t)
		clk := newFakeClock()
		starts := make(chan Task, 10)
		runner := cfg
		runner.Clock = clk
		runner.LeaseTTL = time.Hour // the fake clock stands still; the lease must not lapse meanwhile
		runner.Backoff = Backoff{Base: time.Hour, Max: time.Hour, Jitter: 0.01}
		runner.OnStart = func(_ context.Context, tk Task) error {
			starts <- tk
			if tk.ExternalID == "retry" {
				return errors.New("the first attempt fails")
			}
			return nil
		}
		d := open(t, runner)
		mustWorker(t, d, "w", 10)
		now := clk.Now()
		ts, err := d.Assign(ctx, Assignment{Worker: "w", Start: now, End: now.Add(time.Minute),
			Tasks: newTasks("fin1", "fin2", "fin3", "run", "retry", "cancel"), MaxRetries: 1, Timeout: 1000 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		later, err := d.Assign(ctx, Assignment{Worker: "w", Start: now.Add(time.Hour), End: now.Add(2 * time.Hour), Tasks: newTasks("later")})
		if err != nil {
			t.Fatal(err)
		}
		byID := map[string]Task{}
		for _, tk := range append(ts, later...) {
			byID[tk.ExternalID] = tk
		}
		if err := d.Cancel(ctx, byID["cancel"].UUID); err != nil {
			t.Fatal(err)
		}
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		for range 5 {
			tk := recv(t, starts, "start")
			if strings.HasPrefix(tk.ExternalID, "fin") {
				if err := d.FinishAttempt(ctx, tk.UUID, tk.Attempt); err != nil {
					t.Fatal(err)
				}
			}
		}
		waitStatus(t, d, byID["run"].UUID, StatusRunning)
		if r := waitStatus(t, d, byID["retry"].UUID, StatusWaiting); r.Attempt != 1 || r.LastError == "" {
			t.Fatalf("the task waiting for its retry has attempt %d and last error %q; the test needs a failed attempt", r.Attempt, r.LastError)
		}

		// A client-only dispatcher a month later, keeping a day and one
		// ended task at most.
		pruneClk := newFakeClock()
		pruneClk.Advance(30 * 24 * time.Hour)
		pcfg := cfg
		pcfg.Clock, pcfg.MaxAge, pcfg.MaxRows = pruneClk, 24*time.Hour, 1
		p := open(t, pcfg)
		got, err := p.Prune(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got.ByAge != 4 || got.ByCount != 0 || got.More {
			t.Errorf("prune = %+v, want 4 by age (3 finished, 1 cancelled), none by count", got)
		}
		for id, want := range map[string]Status{"run": StatusRunning, "retry": StatusWaiting, "later": StatusWaiting} {
			tk, err := p.Task(ctx, byID[id].UUID)
			if err != nil {
				t.Errorf("live task %s: %v", id, err)
			} else if tk.Status != want {
				t.Errorf("task %s is %s, want %s", id, tk.Status, want)
			}
		}
		for _, id := range []string{"fin1", "fin2", "fin3", "cancel"} {
			if _, err := p.Task(ctx, byID[id].UUID); !errors.Is(err, ErrUnknownTask) {
				t.Errorf("ended task %s after the prune: err = %v, want ErrUnknownTask", id, err)
			}
		}
		if n := p.Stats().Pruned; n != 4 {
			t.Errorf("Stats().Pruned = %d, want 4", n)
		}
		// The running task still finishes; its slot is freed as usual.
		if err := d.FinishAttempt(ctx, byID["run"].UUID, 1); err != nil {
			t.Errorf("finish of the running task after the prune: %v", err)
		}
	})
}

// MaxRows keeps the most recently ended tasks, ties broken by uuid, in
// batches of RetentionBatch; live tasks are not counted.
func TestPruneByCount(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		ctx := testCtx(t)
		clk := newFakeClock()
		cfg.Clock, cfg.MaxRows, cfg.RetentionBatch = clk, 3, 2
		d := open(t, cfg)
		mustWorker(t, d, "w", 1)
		now := clk.Now()
		ids := make([]string, 9)
		for i := range ids {
			ids[i] = fmt.Sprintf("t%d", i)
		}
		ts, err := d.Assign(ctx, Assignment{Worker: "w", Start: now.Add(time.Hour), End: now.Add(2 * time.Hour), Tasks: newTasks(ids...)})
		if err != nil {
			t.Fatal(err)
		}
		// t0..t7 end a second apart, t6 and t7 together; t8 stays waiting.
		for i := range 8 {
			if i != 7 {
				clk.Advance(time.Second)
			}
			if err := d.Cancel(ctx, ts[i].UUID); err != nil {
				t.Fatal(err)
			}
		}
		got, err := d.Prune(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got.ByAge != 0 || got.ByCount != 5 || got.More {
			t.Errorf("prune = %+v, want 5 by count", got)
		}
		left, err := d.Tasks(ctx, Filter{Worker: "w"})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tk := range left {
			names = append(names, tk.ExternalID)
		}
		slices.Sort(names)
		if want := []string{"t5", "t6", "t7", "t8"}; !slices.Equal(names, want) {
			t.Errorf("tasks left %v, want %v (the 3 most recently ended, and the waiting one)", names, want)
		}
		if again, err := d.Prune(ctx); err != nil || again.ByAge+again.ByCount != 0 {
			t.Errorf("a second prune = %+v, %v; want nothing deleted", again, err)
		}
	})
}

// A started node prunes on its own every RetentionInterval.
func TestRetentionRunsOnStartedNode(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		ctx := testCtx(t)
		cfg.MaxRows, cfg.RetentionInterval = 1, 10*time.Millisecond
		cfg.OnStart = func(context.Context, Task) error { return nil }
		d := open(t, cfg)
		mustWorker(t, d, "w", 1)
		now := time.Now()
		ts, err := d.Assign(ctx, Assignment{Worker: "w", Start: now.Add(time.Hour), End: now.Add(2 * time.Hour), Tasks: newTasks("a", "b", "c")})
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range ts {
			if err := d.Cancel(ctx, tk.UUID); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for d.Stats().Pruned < 2 {
			if time.Now().After(deadline) {
				t.Fatalf("the node pruned %d tasks within 30s, want 2", d.Stats().Pruned)
			}
			time.Sleep(5 * time.Millisecond)
		}
		left, err := d.Tasks(ctx, Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(left) != 1 || d.Stats().Pruned != 2 {
			t.Errorf("%d tasks left, %d pruned; want 1 and 2", len(left), d.Stats().Pruned)
		}
	})
}
