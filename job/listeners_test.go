package job_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/listener"
	"github.com/shardjob/shardjob/regcenter"
)

// hookLog records distribute-once hooks and item executions by fire.
type hookLog struct {
	mu     sync.Mutex
	before map[string][]time.Time // task -> when each before hook ended
	after  map[string][]time.Time // task -> when each after hook began
	begin  map[string][]time.Time // task -> item execution begins
	end    map[string][]time.Time // task -> item execution ends
	madeUp map[string][]time.Time // task -> ends of make-up runs (misfire, failover) among end
	errs   map[string][]error     // task -> execution errors (per-execution listener)
}

func newHookLog() *hookLog {
	return &hookLog{before: map[string][]time.Time{}, after: map[string][]time.Time{}, begin: map[string][]time.Time{},
		end: map[string][]time.Time{}, madeUp: map[string][]time.Time{}, errs: map[string][]error{}}
}

func (h *hookLog) BeforeFire(_ context.Context, f listener.Fire) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.before[f.TaskID] = append(h.before[f.TaskID], time.Now())
	return nil
}

func (h *hookLog) AfterFire(_ context.Context, f listener.Fire) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.after[f.TaskID] = append(h.after[f.TaskID], time.Now())
	return nil
}

func (h *hookLog) listener() listener.Listener {
	return listener.Funcs{After: func(e listener.Execution) {
		h.mu.Lock()
		h.errs[e.TaskID] = append(h.errs[e.TaskID], e.Err)
		h.mu.Unlock()
	}}
}

// item returns a job that records its executions, blocking until ctx
// ends when block says so.
func (h *hookLog) item(block func(sc job.ShardingContext) bool, started chan<- string) job.Job {
	return job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
		h.mu.Lock()
		h.begin[sc.TaskID] = append(h.begin[sc.TaskID], time.Now())
		h.mu.Unlock()
		if block != nil && block(sc) {
			select {
			case started <- sc.TaskID:
			default:
			}
			<-ctx.Done()
			return ctx.Err()
		}
		h.mu.Lock()
		now := time.Now()
		h.end[sc.TaskID] = append(h.end[sc.TaskID], now)
		if sc.Kind == job.KindMisfire || sc.Kind == job.KindFailover {
			h.madeUp[sc.TaskID] = append(h.madeUp[sc.TaskID], now)
		}
		h.mu.Unlock()
		return nil
	})
}

func startOnce(t *testing.T, ns, id string, cfg job.Config, h *hookLog, j job.Job, timeout time.Duration) *instance {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, s := connect(t, ctx, ns, id, job.WithListener(h.listener()))
	in := &instance{id: id, rc: rc, sched: s}
	t.Cleanup(func() { in.stop(t) })
	wrapped, err := job.DistributeOnce(rc, cfg.Name, j, h, timeout, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(ctx, cfg, wrapped); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return in
}

func TestDistributeOnceHooksRunOncePerFire(t *testing.T) {
	ns := namespace(t)
	h := newHookLog()
	// The job's first fire comes once all three have started. An instance
	// takes its place in the sharding when it registers and fires from
	// when its trigger is armed; a fire between the two, which a start
	// under load can see, runs two items of three, and every fire of the
	// 20 s wait after it is out of step. That is the hooks' documented
	// timeout, not what this test is about.
	cfg := job.Config{Name: "once", Cron: "*/2 * * * * *", ShardingTotalCount: 3, Start: time.Now().Add(time.Hour).Truncate(time.Second)}
	var first *instance
	for _, id := range []string{"d1", "d2", "d3"} {
		in := startOnce(t, ns, id, cfg, h, h.item(nil, nil), 20*time.Second)
		if first == nil {
			first = in
		}
	}
	cfg.Start = time.Now().Add(4 * time.Second).Truncate(time.Second)
	doc, err := cfg.Encode()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := first.rc.Set(ctx, layout.Job(cfg.Name).Config(), doc, -1); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		h.mu.Lock()
		done := 0
		for task := range h.after {
			if len(h.end[task]) == 3 {
				done++
			}
		}
		h.mu.Unlock()
		if done >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d fires completed with their after hook", done)
		}
		time.Sleep(100 * time.Millisecond)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for task, ends := range h.end {
		if len(h.before[task]) != 1 {
			t.Errorf("%s: before hook ran %d times", task, len(h.before[task]))
		}
		if len(h.after[task]) > 1 {
			t.Errorf("%s: after hook ran %d times", task, len(h.after[task]))
		}
		for _, b := range h.begin[task] {
			if len(h.before[task]) == 1 && b.Before(h.before[task][0]) {
				t.Errorf("%s: an item began before the before hook had run", task)
			}
		}
		if len(h.after[task]) == 1 {
			if len(ends) != 3 {
				t.Errorf("%s: after hook ran with %d of 3 items ended", task, len(ends))
			}
			for _, e := range ends {
				if h.after[task][0].Before(e) {
					t.Errorf("%s: the after hook began before an item had ended", task)
				}
			}
		}
	}
	for task, errs := range h.errs {
		for _, err := range errs {
			if err != nil {
				t.Errorf("%s: execution failed: %v", task, err)
			}
		}
	}
}

// One of three instances dies with its item running: the others' waits for
// the after hook end with ErrDistributeTimeout, and the hook does not run
// for that fire until the dead instance's item is made up elsewhere (a
// make-up run completes its fire late: the item never completed the fire,
// which is owed); nothing hangs. The job fires every five seconds, so
// that the make-up run cannot complete the fire before the waits' 2 s end,
// however soon the death's reshard comes.
func TestDistributeOnceEndsWithTimeoutWhenAnInstanceDies(t *testing.T) {
	ns := namespace(t)
	h := newHookLog()
	cfg := job.Config{Name: "once-kill", Cron: "*/5 * * * * *", ShardingTotalCount: 3}
	started := make(chan string, 1)
	startOnce(t, ns, "k1", cfg, h, h.item(nil, nil), 2*time.Second)
	startOnce(t, ns, "k2", cfg, h, h.item(nil, nil), 2*time.Second)
	victim := startOnce(t, ns, "k3", cfg, h, h.item(func(sc job.ShardingContext) bool { return sc.ServerID == "k3" }, started), 2*time.Second)
	var task string
	select {
	case task = <-started:
	case <-time.After(60 * time.Second):
		t.Fatal("k3 never ran an item")
	}
	victim.crash(t)
	deadline := time.Now().Add(60 * time.Second)
	for {
		h.mu.Lock()
		var timedOut int
		for _, err := range h.errs[task] {
			if errors.Is(err, listener.ErrDistributeTimeout) {
				timedOut++
			}
		}
		before, after := len(h.before[task]), len(h.after[task])
		var afterAt time.Time
		if after > 0 {
			afterAt = h.after[task][0]
		}
		madeUp := slices.Clone(h.madeUp[task])
		h.mu.Unlock()
		if timedOut >= 2 {
			if before != 1 || after > 1 {
				t.Fatalf("%s: before hook ran %d times, after hook %d; want 1 and at most 1", task, before, after)
			}
			if after == 1 && (len(madeUp) == 0 || afterAt.Before(madeUp[0])) {
				t.Fatalf("%s: the after hook ran at %s, before any make-up run of the dead instance's item ended (%v)", task, afterAt.Format("15:04:05.000"), madeUp)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d surviving executions ended with ErrDistributeTimeout, want 2 (errs %v, before %d, after %d, made up %v)", task, timedOut, h.errs[task], before, after, madeUp)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestFireListenerAroundEachFire(t *testing.T) {
	ns := namespace(t)
	var mu sync.Mutex
	var started, ended []listener.Fire
	fl := listener.FireFuncs{
		Started: func(f listener.Fire) { mu.Lock(); started = append(started, f); mu.Unlock() },
		Ended:   func(f listener.Fire) { mu.Lock(); ended = append(ended, f); mu.Unlock() },
	}
	rec := newRecorder()
	startInstance(t, ns, "f1", everySecond("fires", 4), rec, job.WithFireListener(fl))
	rec.waitFires(t, time.Now(), 2, 4, 60*time.Second)
	mu.Lock()
	defer mu.Unlock()
	if len(ended) == 0 || len(started) < len(ended) {
		t.Fatalf("started %d, ended %d", len(started), len(ended))
	}
	e := ended[len(ended)-1]
	if e.Job != "fires" || len(e.Items) == 0 || e.End.Before(e.Begin) || e.ServerID != "f1" {
		t.Fatalf("fire %+v", e)
	}
}

// hooks is an application's distribute-once listener.
type hooks struct{}

func (hooks) BeforeFire(ctx context.Context, f listener.Fire) error {
	// e.g. snapshot the source table once for all items of the fire
	return nil
}

func (hooks) AfterFire(ctx context.Context, f listener.Fire) error {
	// e.g. publish the fire's results once every item is done
	return nil
}

func ExampleDistributeOnce() {
	ctx := context.Background()
	rc, err := regcenter.Open(ctx, regcenter.Config{Servers: []string{"127.0.0.1:2181"}, Namespace: "shop"})
	if err != nil {
		return
	}
	defer rc.Close()
	sched, err := job.NewScheduler(rc)
	if err != nil {
		return
	}
	work := job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error { return nil })
	// Every instance wraps the job the same way.
	j, err := job.DistributeOnce(rc, "daily-export", work, hooks{}, time.Minute, nil)
	if err != nil {
		return
	}
	_ = sched.Add(ctx, job.Config{Name: "daily-export", Cron: "0 0 3 * * *", ShardingTotalCount: 8}, j)
}
