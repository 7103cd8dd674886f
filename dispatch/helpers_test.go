package dispatch

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/testing/pgtest"
	"github.com/shardjob/shardjob/internal/testing/testlog"
)

var pg *pgtest.Server

func TestMain(m *testing.M) { os.Exit(pgtest.RunTests(m, &pg)) }

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// eachStore runs f against SQLite and against PostgreSQL, each with a
// fresh database; base holds its Driver and DSN.
func eachStore(t *testing.T, f func(t *testing.T, base Config)) {
	t.Run("sqlite", func(t *testing.T) {
		f(t, Config{Driver: "sqlite", DSN: filepath.Join(t.TempDir(), "dispatch.db"), Logger: testlog.Logger(t)})
	})
	t.Run("postgres", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		dsn, err := pg.NewDatabase(ctx)
		if err != nil {
			t.Fatal(err)
		}
		f(t, Config{Driver: "postgres", DSN: dsn, Logger: testlog.Logger(t)})
	})
}

// open opens a dispatcher and closes it when the test ends.
func open(t *testing.T, cfg Config) *Dispatcher {
	t.Helper()
	d, err := Open(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := d.Close(ctx); err != nil && err != ErrClosed {
			t.Errorf("close: %v", err)
		}
	})
	return d
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// recv waits for one value from ch, failing the test after a generous bound.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s within 30s", what)
		panic("unreachable")
	}
}

// none checks that ch holds nothing now, after the dispatcher settled.
func none[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("unexpected %s: %v", what, v)
	default:
	}
}

func mustWorker(t *testing.T, d *Dispatcher, name string, max int) {
	t.Helper()
	if err := d.PutWorker(testCtx(t), Worker{Name: name, MaxRunning: max}); err != nil {
		t.Fatal(err)
	}
}

func newTasks(ids ...string) []NewTask {
	out := make([]NewTask, len(ids))
	for i, id := range ids {
		out[i] = NewTask{ExternalID: id, Info: []byte("info-" + id)}
	}
	return out
}

// waitStatus polls the task until it has the status (the store is the
// truth; handlers report through it).
func waitStatus(t *testing.T, d *Dispatcher, uuid string, want Status) Task {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		tk, err := d.Task(testCtx(t), uuid)
		if err != nil {
			t.Fatal(err)
		}
		if tk.Status == want {
			return tk
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is %s after 30s, want %s", uuid, tk.Status, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
