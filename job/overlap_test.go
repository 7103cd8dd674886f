package job_test

import (
	"context"
	"errors"
	"sync"
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
