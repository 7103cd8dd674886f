package job_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
)

func TestAfterConfigAndGraphErrors(t *testing.T) {
	base := job.Config{Name: "b", Cron: "* * * * * *", ShardingTotalCount: 1}
	for _, tc := range []struct {
		name string
		mod  func(*job.Config)
		want string
	}{
		{"itself", func(c *job.Config) { c.After = "b" }, "names the job itself"},
		{"twice", func(c *job.Config) { c.After = "a, a" }, `names "a" twice`},
		{"bad name", func(c *job.Config) { c.After = "a,x/y" }, `"x/y" is not a job name`},
		{"unmonitored", func(c *job.Config) { c.After, c.Unmonitored = "a", true }, "unmonitored job keeps no records"},
		{"policy", func(c *job.Config) { c.After, c.OnParentFailure = "a", "retry" }, `onParentFailure "retry"`},
		{"policy without after", func(c *job.Config) { c.OnParentFailure = job.ParentRun }, "needs after"},
		{"negative timeout", func(c *job.Config) { c.After, c.AfterTimeout = "a", -time.Second }, "must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.mod(&c)
			if err := c.Validate(); !errors.Is(err, job.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate: %v, want %q", err, tc.want)
			}
		})
	}

	// The graph, as a job file's jobs are checked together: a cycle is
	// named; a parent must be among them and on the same schedule.
	j := func(name, cron, after string) job.Config {
		return job.Config{Name: name, Cron: cron, ShardingTotalCount: 1, After: after}
	}
	for _, tc := range []struct {
		name string
		cfgs []job.Config
		want string
	}{
		{"cycle", []job.Config{j("a", "* * * * * *", "c"), j("b", "* * * * * *", "a"), j("c", "* * * * * *", "b")}, "a cycle: a → b → c → a"},
		{"unknown parent", []job.Config{j("b", "* * * * * *", "a")}, `job "b": after "a": no job "a" here`},
		{"other schedule", []job.Config{j("a", "*/2 * * * * *", ""), j("b", "* * * * * *", "a")}, `job "a" fires on other times than this job (cron "*/2 * * * * *" there, "* * * * * *" here)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := job.CheckDependencies(tc.cfgs, nil)
			if !errors.Is(err, job.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckDependencies: %v, want %q", err, tc.want)
			}
		})
	}
	if err := job.CheckDependencies([]job.Config{j("a", "* * * * * *", ""), j("b", "* * * * * *", "a"), j("c", "* * * * * *", "a,b")}, nil); err != nil {
		t.Fatalf("a valid chain: %v", err)
	}
	err := job.CheckDependencies([]job.Config{j("b", "* * * * * *", "a")}, func(name string) string { return "jobs[0] " + name })
	if err == nil || !strings.HasPrefix(err.Error(), "jobs[0] b: after") {
		t.Fatalf("CheckDependencies naming the jobs its own way: %v", err)
	}
}

// chainRun is one run of a job of a chain.
type chainRun struct {
	job        string
	item       int
	fire       time.Time
	begin, end time.Time
	parentErr  error
}

type chainLog struct {
	mu   sync.Mutex
	runs []chainRun
}

func (l *chainLog) job(name string, hold time.Duration, fail func(fire time.Time) bool) job.Job {
	return job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
		begin := time.Now()
		time.Sleep(hold)
		l.mu.Lock()
		l.runs = append(l.runs, chainRun{name, sc.Item, sc.FireTime, begin, time.Now(), sc.ParentErr})
		l.mu.Unlock()
		if fail != nil && fail(sc.FireTime) {
			return errors.New("failed on purpose")
		}
		return nil
	})
}

func (l *chainLog) snapshot() []chainRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]chainRun(nil), l.runs...)
}

// A chain of three jobs over two instances: every fire of b starts after
// a has completed it on every item, c after b; each runs once per item.
// A fire of a that fails skips that fire of b, and so of c; with the run
// policy, the dependent runs and is told why.
func TestAfterRunsAChainInOrder(t *testing.T) {
	ns := namespace(t)
	log := &chainLog{}
	var failMu sync.Mutex
	var failAt time.Time
	failing := func(fire time.Time) bool {
		failMu.Lock()
		defer failMu.Unlock()
		return fire.Equal(failAt)
	}
	cfgs := []job.Config{
		{Name: "a", Cron: "* * * * * *", ShardingTotalCount: 2},
		{Name: "b", Cron: "* * * * * *", ShardingTotalCount: 2, After: "a"},
		{Name: "c", Cron: "* * * * * *", ShardingTotalCount: 2, After: "b"},
		{Name: "d", Cron: "* * * * * *", ShardingTotalCount: 1, After: "a", OnParentFailure: job.ParentRun},
	}
	events := make(chan job.Event, 64)
	for _, id := range []string{"s1", "s2"} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		rc, s := connect(t, ctx, ns, id, eventsTo(events))
		for _, cfg := range cfgs {
			hold := 150 * time.Millisecond
			var fail func(time.Time) bool
			if cfg.Name == "a" {
				fail = failing
			}
			if cfg.Name != "a" {
				hold = 20 * time.Millisecond
			}
			if err := s.Add(ctx, cfg, log.job(cfg.Name, hold, fail)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		in := &instance{id: id, rc: rc, sched: s}
		t.Cleanup(func() { in.stop(t) })
	}

	// Let the chain settle, then make a fail at a fire two seconds ahead.
	time.Sleep(3 * time.Second)
	failMu.Lock()
	failAt = time.Now().Truncate(time.Second).Add(2 * time.Second)
	failMu.Unlock()
	// The event of the failed fire: the start may have reported others
	// (a first fire that waited for a parent longer than its period).
	var ev job.Event
	for !strings.Contains(ev.Detail, failAt.Format("2006-01-02T15:04:05.000Z07:00")) {
		ev = waitEvent(t, events, job.EventParentFailed, 20*time.Second)
	}
	if !errors.Is(ev.Err, job.ErrParentFailed) {
		t.Fatalf("event %+v", ev)
	}
	time.Sleep(3 * time.Second)

	runs := log.snapshot()
	type key struct {
		job  string
		fire time.Time
	}
	by := map[key][]chainRun{}
	for _, r := range runs {
		by[key{r.job, r.fire}] = append(by[key{r.job, r.fire}], r)
	}
	checked := 0
	for k, as := range by {
		if k.job != "a" || len(as) != 2 || k.fire.Equal(failAt) {
			continue
		}
		bs, cs := by[key{"b", k.fire}], by[key{"c", k.fire}]
		if len(bs) != 2 || len(cs) != 2 {
			continue // the last fires may not have reached c yet
		}
		checked++
		latest := func(rs []chainRun) time.Time {
			var t time.Time
			for _, r := range rs {
				if r.end.After(t) {
					t = r.end
				}
			}
			return t
		}
		for _, b := range bs {
			if b.begin.Before(latest(as)) {
				t.Errorf("fire %s: b item %d began at %s, before a ended at %s", k.fire.Format("15:04:05"), b.item, b.begin.Format("15:04:05.000"), latest(as).Format("15:04:05.000"))
			}
		}
		for _, c := range cs {
			if c.begin.Before(latest(bs)) {
				t.Errorf("fire %s: c item %d began before b ended", k.fire.Format("15:04:05"), c.item)
			}
		}
		for _, rs := range [][]chainRun{as, bs, cs} {
			if rs[0].item == rs[1].item {
				t.Errorf("fire %s: %s ran item %d twice", k.fire.Format("15:04:05"), rs[0].job, rs[0].item)
			}
		}
	}
	if checked < 3 {
		t.Fatalf("only %d fires went through the whole chain (runs: %d)", checked, len(runs))
	}
	// The failed fire: a ran it (and failed), b and c did not run it, d
	// ran it knowing why.
	if n := len(by[key{"a", failAt}]); n != 2 {
		t.Fatalf("a ran the failing fire on %d items", n)
	}
	if n := len(by[key{"b", failAt}]) + len(by[key{"c", failAt}]); n != 0 {
		t.Fatalf("b and c ran the fire their parent failed: %d runs", n)
	}
	ds := by[key{"d", failAt}]
	if len(ds) != 1 || !errors.Is(ds[0].parentErr, job.ErrParentFailed) {
		t.Fatalf("d at the failed fire: %+v", ds)
	}
	// The fires after it went through again.
	if len(by[key{"c", failAt.Add(2 * time.Second)}]) != 2 {
		t.Fatalf("the chain did not resume after the failed fire")
	}
}

// The last fire of a schedule (a calendar's limit) runs after its parent
// like any other: the default wait has no next fire to end at, and the
// parent's record covering the schedule through its end is complete, not
// short of a fire that will never come. The parent takes 1.5 s of the
// two between fires: more than the second the wait was cut to when no
// next fire bounded it.
func TestAfterRunsTheScheduleLastFire(t *testing.T) {
	ns := namespace(t)
	log := &chainLog{}
	start := time.Now().Truncate(2 * time.Second).Add(4 * time.Second)
	cfgs := []job.Config{
		{Name: "a", Cron: "*/2 * * * * *", ShardingTotalCount: 1, Start: start, Limit: 2},
		{Name: "b", Cron: "*/2 * * * * *", ShardingTotalCount: 1, Start: start, Limit: 2, After: "a"},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, s := connect(t, ctx, ns, "s1")
	for _, cfg := range cfgs {
		hold := 20 * time.Millisecond
		if cfg.Name == "a" {
			hold = 1500 * time.Millisecond
		}
		if err := s.Add(ctx, cfg, log.job(cfg.Name, hold, nil)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	in := &instance{id: "s1", rc: rc, sched: s}
	t.Cleanup(func() { in.stop(t) })

	last := start.Add(2 * time.Second)
	for {
		var bs []chainRun
		for _, r := range log.snapshot() {
			if r.job == "b" {
				bs = append(bs, r)
			}
		}
		if len(bs) == 2 {
			for i, r := range bs {
				if want := start.Add(time.Duration(2*i) * time.Second); !r.fire.Equal(want) || r.parentErr != nil {
					t.Fatalf("b's run %d: fire %v parent error %v, want fire %v and no error", i, r.fire, r.parentErr, want)
				}
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("b ran %d of the schedule's two fires (the last %v): %+v", len(bs), last, log.snapshot())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Start refuses jobs whose parents are not added with them, naming the
// parent, and changes nothing.
func TestAfterStartRefusesAMissingParent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, s := connect(t, ctx, namespace(t), "s1")
	defer rc.Close()
	if err := s.Add(ctx, job.Config{Name: "b", Cron: "* * * * * *", ShardingTotalCount: 1, After: "a"}, job.SimpleFunc(func(context.Context, job.ShardingContext) error { return nil })); err != nil {
		t.Fatal(err)
	}
	err := s.Start(ctx)
	if !errors.Is(err, job.ErrInvalidConfig) || !strings.Contains(err.Error(), `no job "a" here`) {
		t.Fatalf("Start: %v", err)
	}
	if jobs, err := rc.Children(ctx, "/"); err != nil || len(jobs) != 0 {
		t.Fatalf("the namespace after a refused start: %v %v", jobs, err)
	}
}

// Jitter and dependencies compose: a dependent's fire is matched to its
// parents' fires by the schedule's time before jitter, so a parent and a
// dependent with jitter each (their delays differ: they come from the
// jobs' names), or a dependent without jitter after a parent with it, run
// every fire after the parent and skip none.
func TestAfterWithJitterRunsEveryFire(t *testing.T) {
	ns := namespace(t)
	log := &chainLog{}
	cfgs := []job.Config{
		{Name: "a", Cron: "* * * * * *", ShardingTotalCount: 1, Jitter: 300 * time.Millisecond},
		{Name: "b", Cron: "* * * * * *", ShardingTotalCount: 1, Jitter: 300 * time.Millisecond, After: "a"},
		{Name: "c", Cron: "* * * * * *", ShardingTotalCount: 1, After: "a"},
	}
	events := make(chan job.Event, 256)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, s := connect(t, ctx, ns, "s1", eventsTo(events))
	for _, cfg := range cfgs {
		if err := s.Add(ctx, cfg, log.job(cfg.Name, 10*time.Millisecond, nil)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	in := &instance{id: "s1", rc: rc, sched: s}
	t.Cleanup(func() { in.stop(t) })

	// Four fires of both dependents after the first that each ran.
	count := func(name string) int {
		n := 0
		for _, r := range log.snapshot() {
			if r.job == name && r.parentErr == nil {
				n++
			}
		}
		return n
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for count("b") < 5 || count("c") < 5 {
		select {
		case <-tick.C:
		case ev := <-events:
			if ev.Kind == job.EventParentFailed {
				t.Fatalf("a dependent skipped a fire: %s", ev.Detail)
			}
		case <-ctx.Done():
			t.Fatalf("b ran %d fires and c %d in 30 s", count("b"), count("c"))
		}
	}
	// Each dependent's run began after a's run of the same fire before
	// jitter (the second the fires share) had ended.
	aEnd := map[time.Time]time.Time{}
	for _, r := range log.snapshot() {
		if r.job == "a" {
			aEnd[r.fire.Truncate(time.Second)] = r.end
		}
	}
	for _, r := range log.snapshot() {
		if r.job == "a" {
			continue
		}
		end, ok := aEnd[r.fire.Truncate(time.Second)]
		if !ok || r.begin.Before(end) {
			t.Errorf("%s's fire %s began at %s, before its parent's run of that fire ended (%v, %s)",
				r.job, r.fire.Format("15:04:05.000"), r.begin.Format("15:04:05.000"), ok, end.Format("15:04:05.000"))
		}
	}
}
