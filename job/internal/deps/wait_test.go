package deps

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/schedule"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
)

// memCenter is the part of a registry a wait reads, in memory: Get. The
// other methods are not there (the embedded nil interface panics).
type memCenter struct {
	regcenter.Center
	mu    sync.Mutex
	nodes map[string][]byte
}

func (m *memCenter) Get(_ context.Context, path string) ([]byte, regcenter.Stat, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	data, ok := m.nodes[path]
	if !ok {
		return nil, regcenter.Stat{}, regcenter.ErrNoNode
	}
	return data, regcenter.Stat{}, nil
}

func (m *memCenter) complete(t *testing.T, p layout.Job, item int, c stored.Completed) {
	t.Helper()
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.nodes == nil {
		m.nodes = map[string][]byte{}
	}
	m.nodes[p.ItemNode(item, layout.Completed)] = data
}

// TestAwait: a wait ends when every item of every parent covers the
// fires waited for, says which item's run failed, or why it gave up.
func TestAwait(t *testing.T) {
	sched, perr := schedule.ParseCron("* * * * * *", time.UTC, time.Second)
	if perr != nil {
		t.Fatal(perr.Detail)
	}
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	ms := func(at time.Time) int64 { return at.UnixMilli() }
	ran := func(last time.Time) stored.Completed {
		return stored.Completed{Fire: ms(last), Ran: [][2]int64{{ms(t0), ms(last)}}, Kind: "cron"}
	}
	parents := map[string]Parent{"a": {Paths: "a", Items: 2, Schedule: sched}, "b": {Paths: "b", Items: 1, Schedule: sched}}
	wait := func(timeout time.Duration) Wait {
		return Wait{Parents: []string{"a", "b"}, First: t0.Add(time.Second), Last: t0.Add(2 * time.Second), Fire: t0.Add(time.Second), Timeout: timeout,
			Parent: func(name string) (Parent, error) { return parents[name], nil }}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := t.Context()

	rc := &memCenter{}
	rc.complete(t, "a", 0, ran(t0.Add(2*time.Second)))
	rc.complete(t, "a", 1, ran(t0.Add(2*time.Second)))
	rc.complete(t, "b", 0, ran(t0.Add(time.Second))) // the fire of t0+2s not run yet
	err := Await(ctx, rc, log, wait(300*time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), "a, b had not completed the fire of 2026-03-01T00:00:01.000Z (this job's fire 2026-03-01T00:00:01.000Z) on every item within 300ms") {
		t.Fatalf("a parent behind: %v", err)
	}

	// Written during the wait: read at the next poll.
	time.AfterFunc(150*time.Millisecond, func() { rc.complete(t, "b", 0, ran(t0.Add(3*time.Second))) })
	if err := Await(ctx, rc, log, wait(5*time.Second)); err != nil {
		t.Fatalf("every parent through the fires: %v", err)
	}

	// The result of the fires waited for, though later ones ran since.
	failed := ran(t0.Add(3 * time.Second))
	failed.Failed = []stored.FailedRun{{First: ms(t0.Add(2 * time.Second)), Last: ms(t0.Add(2 * time.Second)), Error: "warehouse answered 503"}}
	rc.complete(t, "a", 1, failed)
	if err := Await(ctx, rc, log, wait(5*time.Second)); err == nil || err.Error() != "a item 1, fire 2026-03-01T00:00:02.000Z: warehouse answered 503" {
		t.Fatalf("a parent's run failed: %v", err)
	}

	// What w.Parent refuses ends the wait with its error.
	gone := errors.New(`parent "b" is not added on this scheduler`)
	w := wait(5 * time.Second)
	w.Parent = func(name string) (Parent, error) {
		if name == "b" {
			return Parent{}, gone
		}
		return parents[name], nil
	}
	if err := Await(ctx, rc, log, w); !errors.Is(err, gone) {
		t.Fatalf("a parent refused: %v", err)
	}

	// A context ended: its cause.
	stop := errors.New("the session ended")
	cctx, cancel := context.WithCancelCause(ctx)
	time.AfterFunc(150*time.Millisecond, func() { cancel(stop) })
	rc.complete(t, "a", 0, ran(t0)) // behind again
	if err := Await(cctx, rc, log, wait(5*time.Second)); !errors.Is(err, stop) || !strings.HasPrefix(err.Error(), "stopped waiting for a, b: ") {
		t.Fatalf("the context ended: %v", err)
	}
}

// TestBound: a job's own timeout, else its next fire (at least a second
// away), else, after its last fire, LastFireWait.
func TestBound(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	minute, perr := schedule.ParseCron("0 * * * * *", time.UTC, 0)
	if perr != nil {
		t.Fatal(perr.Detail)
	}
	ended := cronFunc(func(time.Time) time.Time { return time.Time{} })
	for _, c := range []struct {
		name      string
		timeout   time.Duration
		sched     cron.Schedule
		last, now time.Time
		want      time.Duration
	}{
		{"the job's timeout", 5 * time.Second, minute, t0, t0, 5 * time.Second},
		{"a nanosecond's timeout", time.Nanosecond, minute, t0, t0, time.Nanosecond},
		{"the job's timeout after its last fire", 5 * time.Second, ended, t0, t0, 5 * time.Second},
		{"until the next fire", 0, minute, t0, t0.Add(15 * time.Second), 45 * time.Second},
		{"a negative timeout: until the next fire", -time.Second, minute, t0, t0.Add(15 * time.Second), 45 * time.Second},
		{"the next fire now: a second", 0, minute, t0, t0.Add(time.Minute), time.Second},
		{"the next fire past: a second", 0, minute, t0, t0.Add(2 * time.Minute), time.Second},
		{"the last fire", 0, ended, t0, t0, LastFireWait},
	} {
		if got := Bound(c.timeout, c.sched, c.last, c.now); got != c.want {
			t.Errorf("%s: Bound = %v, want %v", c.name, got, c.want)
		}
	}
}

// cronFunc is a schedule of a function.
type cronFunc func(time.Time) time.Time

func (f cronFunc) Next(t time.Time) time.Time { return f(t) }
