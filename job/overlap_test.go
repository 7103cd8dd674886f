package job_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/listener"
)

// With overlap replace, a fire that finds its item's previous run still
// going cancels it through its context (cause ErrReplaced), and runs once
// it has returned; the replaced run is recorded as failed with
// ErrReplaced, and its fire is not made up.
func TestOverlapReplaceCancelsTheRunningExecution(t *testing.T) {
	ns := namespace(t)
	type run struct {
		fire, through time.Time
		kind          job.Kind
		cause         error
	}
	var mu sync.Mutex
	var runs []run
	var ended []listener.Execution
	done := make(chan struct{}, 8)
	first := true
	j := job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
		mu.Lock()
		block := first
		first = false
		mu.Unlock()
		var cause error
		if block {
			select {
			case <-ctx.Done():
				cause = context.Cause(ctx)
			case <-time.After(20 * time.Second):
			}
		}
		mu.Lock()
		runs = append(runs, run{sc.FireTime, sc.Through, sc.Kind, cause})
		mu.Unlock()
		select {
		case done <- struct{}{}:
		default:
		}
		return ctx.Err()
	})
	cfg := everySecond("replace", 1)
	cfg.Overlap = job.OverlapReplace
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, s := connect(t, ctx, ns, "s1", job.WithListener(listener.Funcs{After: func(e listener.Execution) {
		mu.Lock()
		ended = append(ended, e)
		mu.Unlock()
	}}))
	if err := s.Add(ctx, cfg, j); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	in := &instance{id: "s1", rc: rc, sched: s}
	t.Cleanup(func() { in.stop(t) })

	for {
		mu.Lock()
		n := len(runs)
		mu.Unlock()
		if n >= 2 {
			break
		}
		select {
		case <-done:
		case <-ctx.Done():
			t.Fatalf("the blocked run was not replaced: %d runs ended", n)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	replaced, next := runs[0], runs[1]
	if !errors.Is(replaced.cause, job.ErrReplaced) {
		t.Fatalf("the replaced run's context cause: %v", replaced.cause)
	}
	if want := replaced.fire.Add(time.Second); !next.fire.Equal(want) {
		t.Fatalf("the run after the replaced one is for %v (%s), want the replacing fire %v", next.fire, next.kind, want)
	}
	if len(ended) < 1 || !errors.Is(ended[0].Err, job.ErrReplaced) {
		t.Fatalf("the replaced run is recorded with %v", ended[0].Err)
	}
	for _, r := range runs[1:] {
		if !r.fire.After(replaced.fire) {
			t.Fatalf("the replaced fire %v ran again: %+v", replaced.fire, r)
		}
	}
}

func TestOverlapConfig(t *testing.T) {
	c := job.Config{Name: "o", Cron: "* * * * * *", ShardingTotalCount: 1, Overlap: job.OverlapSkip, Misfire: job.MisfireOnce}
	if err := c.Validate(); !errors.Is(err, job.ErrInvalidConfig) {
		t.Fatalf("overlap skip with misfire once: %v", err)
	}
	c.Overlap = "cancel-other"
	if err := c.Validate(); !errors.Is(err, job.ErrInvalidConfig) {
		t.Fatalf("unknown overlap: %v", err)
	}
	got, err := job.DecodeConfig([]byte("name: o\ncron: '* * * * * *'\nshardingTotalCount: 1\noverlap: replace\n"))
	if err != nil || got.Overlap != job.OverlapReplace {
		t.Fatalf("decode: %+v %v", got, err)
	}
	enc, _ := got.Encode()
	if back, err := job.DecodeConfig(enc); err != nil || back.Overlap != job.OverlapReplace {
		t.Fatalf("round trip: %v %v\n%s", back.Overlap, err, enc)
	}
}

// With overlap allow, a fire that finds its item's previous run still
// going runs beside it: the runs of one item overlap, each fire runs once
// as itself (nothing is owed or made up for it), and Stop waits for every
// run of the item, not only the first to have started.
func TestOverlapAllowRunsBesideTheRunningExecution(t *testing.T) {
	ns := namespace(t)
	var mu sync.Mutex
	var fires []time.Time
	var kinds []job.Kind
	active, most := 0, 0
	release := make(chan struct{})
	overlapped := make(chan struct{})
	j := job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
		mu.Lock()
		fires, kinds = append(fires, sc.FireTime), append(kinds, sc.Kind)
		active++
		if active > most {
			most = active
			if most == 3 {
				close(overlapped)
			}
		}
		mu.Unlock()
		select { // every run blocks until three are running at once
		case <-release:
		case <-time.After(20 * time.Second):
		}
		mu.Lock()
		active--
		mu.Unlock()
		return nil
	})
	cfg := everySecond("allow", 1)
	cfg.Overlap = job.OverlapAllow
	cfg.Unmonitored = true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, s := connect(t, ctx, ns, "s1")
	if err := s.Add(ctx, cfg, j); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	in := &instance{id: "s1", rc: rc, sched: s}
	select {
	case <-overlapped:
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("the item's runs never overlapped: at most %d at once, fires %v", most, fires)
	}
	stopped := make(chan struct{})
	go func() { // ends when Stop returns, which the test waits for below
		defer close(stopped)
		in.stop(t)
	}()
	select {
	case <-stopped:
		t.Fatal("Stop returned while the item's runs were still going")
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	select {
	case <-stopped:
	case <-ctx.Done():
		t.Fatal("Stop did not return once the runs ended")
	}
	mu.Lock()
	defer mu.Unlock()
	if active != 0 {
		t.Fatalf("%d runs still going after Stop", active)
	}
	seen := map[time.Time]bool{}
	for i, f := range fires {
		if seen[f] {
			t.Fatalf("the fire %v ran twice: %v", f, fires)
		}
		seen[f] = true
		if kinds[i] != job.KindFire {
			t.Fatalf("run %d for %v is a %s run, want the fire itself: %v", i, f, kinds[i], kinds)
		}
	}
}

func TestOverlapAllowNeedsAnUnmonitoredJob(t *testing.T) {
	c := job.Config{Name: "o", Cron: "* * * * * *", ShardingTotalCount: 1, Overlap: job.OverlapAllow}
	err := c.Validate()
	if !errors.Is(err, job.ErrInvalidConfig) || !strings.Contains(err.Error(), "monitorExecution: false") {
		t.Fatalf("overlap allow on a monitored job: %v", err)
	}
	c.Unmonitored = true
	if err := c.Validate(); err != nil {
		t.Fatalf("overlap allow on an unmonitored job: %v", err)
	}
	got, err := job.DecodeConfig([]byte("name: o\ncron: '* * * * * *'\nshardingTotalCount: 1\nmonitorExecution: false\noverlap: allow\n"))
	if err != nil || got.Overlap != job.OverlapAllow {
		t.Fatalf("decode: %+v %v", got, err)
	}
}

// With overlap skip, an item a reshard moves while its previous owner
// runs it is run by its new owner once that run is over. The new owner
// reads the item's record as it gains it, and the previous owner's
// completion writes the record after that read: the fire that proves what
// the new owner knew finds it changed, and leaves the item. The fires
// after it must not prove the same stale record again (a job that owes
// nothing for a fire it left never read it again, and the item never ran
// again there).
func TestOverlapSkipRunsAnItemGainedWhileItsOwnerRanIt(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	// Runs end between fires, not as a fire begins (a fire that meets the
	// mark waits a moment for it to go, and would read the record again).
	var began atomic.Int64
	rec.holdFor = func(job.ShardingContext) time.Duration {
		began.Add(1)
		return 2200 * time.Millisecond
	}
	cfg := everySecond("skipgained", 2)
	cfg.Overlap = job.OverlapSkip
	// Records written as nodes, each run's: the new owner can prove what
	// it read (a record in a journal it cannot, and reads it again).
	nodes := job.WithCompletionJournal(false)
	startInstance(t, ns, "a", cfg, rec, nodes)
	// a completes a run of each item (their records exist) and begins its
	// next: b joins while a runs them.
	waitUntil(t, 20*time.Second, func() bool {
		ran := map[int]bool{}
		for _, r := range rec.snapshot() {
			ran[r.item] = true
		}
		return len(ran) == 2
	})
	completed := began.Load()
	waitUntil(t, 20*time.Second, func() bool { return began.Load() > completed })
	startInstance(t, ns, "b", cfg, rec, nodes)
	waitUntil(t, 20*time.Second, func() bool {
		return slices.ContainsFunc(rec.snapshot(), func(r record) bool { return r.server == "b" })
	})
	for _, p := range overlaps(rec.snapshot()) {
		t.Errorf("item %d ran on %s and %s at once: %+v, %+v", p[0].item, p[0].server, p[1].server, p[0], p[1])
	}
}
