package history

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/testing/leakcheck"
	"github.com/shardjob/shardjob/internal/testing/pgtest"
	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/listener"
	"github.com/shardjob/shardjob/regcenter/zktest"
)

var (
	pg *pgtest.Server
	zc *zktest.Cluster
)

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	var err error
	pg, err = pgtest.Start(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := zktest.RunTests(leakcheck.Checked(m), &zc)
	if err := pg.Close(); err != nil && code == 0 {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		code = 1
	}
	os.Exit(code)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// eachDB runs f against SQLite and against PostgreSQL, each with a fresh
// database; base holds its Driver and DSN.
func eachDB(t *testing.T, f func(t *testing.T, base Config)) {
	t.Run("sqlite", func(t *testing.T) {
		f(t, Config{Driver: DriverSQLite, DSN: filepath.Join(t.TempDir(), "history.db"), Logger: testlog.Logger(t)})
	})
	t.Run("postgres", func(t *testing.T) {
		dsn, err := pg.NewDatabase(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		f(t, Config{Driver: DriverPostgres, DSN: dsn, Logger: testlog.Logger(t)})
	})
}

// open opens a recorder and closes it when the test ends.
func open(t *testing.T, cfg Config) *Recorder {
	t.Helper()
	r, err := Open(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := r.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return r
}

func flush(t *testing.T, r *Recorder) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Flush(ctx); err != nil {
		t.Fatalf("flush: %v (stats %+v)", err, r.Stats())
	}
}

// base is a fixed instant the synthetic executions start from.
var base = time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)

// exec is a synthetic execution: item i of job at base+sec seconds.
func exec(job, server, kind string, item, sec int, err error) listener.Execution {
	fire := base.Add(time.Duration(sec) * time.Second)
	return listener.Execution{Job: job, TaskID: fmt.Sprintf("%s@%d", job, fire.Unix()), ServerID: server, Item: item, Kind: kind,
		FireTime: fire, Begin: fire.Add(3 * time.Millisecond), End: fire.Add(250 * time.Millisecond), Err: err}
}

// logBuffer collects log lines, safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	t   testing.TB
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.t.Log(strings.TrimRight(string(p), "\n"))
	return b.buf.Write(p)
}

// lines returns the lines that contain s.
func (b *logBuffer) lines(s string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, l := range strings.Split(b.buf.String(), "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}

func captureLogger(t testing.TB) (*slog.Logger, *logBuffer) {
	b := &logBuffer{t: t}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelInfo})), b
}

// waitFor polls cond every 20 ms until it holds or the deadline passes.
func waitFor(t *testing.T, deadline time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.After(deadline)
	for !cond() {
		select {
		case <-end:
			t.Fatalf("no %s within %v", what, deadline)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// pgtestStart starts a PostgreSQL server of the test's own, to stop and
// restart without disturbing the others.
func pgtestStart(t *testing.T) (*pgtest.Server, error) {
	srv, err := pgtest.Start(testCtx(t))
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("pgtest close: %v", err)
		}
	})
	return srv, nil
}
