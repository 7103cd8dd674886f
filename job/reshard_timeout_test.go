package job_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// timeoutLog passes records on to inner and keeps the timeout of every
// "resharding did not finish in time" warning in got.
type timeoutLog struct {
	inner slog.Handler
	got   *timeouts
}

type timeouts struct {
	mu sync.Mutex
	ds []time.Duration
}

func (h timeoutLog) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }
func (h timeoutLog) WithAttrs(as []slog.Attr) slog.Handler {
	return timeoutLog{h.inner.WithAttrs(as), h.got}
}
func (h timeoutLog) WithGroup(g string) slog.Handler { return timeoutLog{h.inner.WithGroup(g), h.got} }

func (h timeoutLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "resharding did not finish in time; firing with the stored assignment" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "timeout" {
				h.got.mu.Lock()
				h.got.ds = append(h.got.ds, a.Value.Duration())
				h.got.mu.Unlock()
			}
			return true
		})
	}
	return h.inner.Handle(ctx, r)
}

func (t *timeouts) seen() []time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]time.Duration(nil), t.ds...)
}

// WithReshardTimeout bounds a follower's wait for a leader that does not
// reshard: past it, the fire runs with the assignment the registry holds.
// The leader here is a candidate that never acts (an observer's session
// first in the election), so the reshard a new server flags never comes.
func TestReshardTimeoutFiresWithTheStoredAssignment(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	obs := observer(t, ns)
	ctx := tctx(t)
	if err := obs.EnsurePath(ctx, "/stuck/leader/election/latch"); err != nil {
		t.Fatal(err)
	}
	if _, err := obs.Create(ctx, "/stuck/leader/election/latch/n_", []byte("ghost"), regcenter.EphemeralSequential); err != nil {
		t.Fatal(err)
	}
	if err := obs.EnsurePath(ctx, "/stuck/servers/s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := obs.Create(ctx, "/stuck/servers/s1/sharding", []byte("0"), regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	logs := &timeouts{}
	const timeout = 300 * time.Millisecond
	cfg := job.Config{Name: "stuck", Cron: "* * * * * *", ShardingTotalCount: 1}
	startInstance(t, ns, "s1", cfg, rec, job.WithReshardTimeout(timeout), job.WithLogger(slog.New(timeoutLog{testLogger(t).Handler(), logs})))
	rec.waitFires(t, time.Now(), 1, 1, 30*time.Second)
	if due, _, err := obs.Exists(ctx, "/stuck/leader/sharding/necessary"); err != nil || !due {
		t.Fatalf("reshard flag present %v, err %v: the fire did not wait for one", due, err)
	}
	got := logs.seen()
	if len(got) == 0 {
		t.Fatal("the fire ran without waiting for the flagged reshard")
	}
	for _, d := range got {
		if d != timeout {
			t.Fatalf("waited %v for the reshard, want the configured %v", d, timeout)
		}
	}
	if _, err := job.NewScheduler(obs, job.WithReshardTimeout(0)); err == nil {
		t.Fatal("a reshard timeout of 0 was accepted")
	}
}
