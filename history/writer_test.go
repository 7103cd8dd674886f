package history

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

// TestDropReportOncePerInterval drives the drop report with a clock of
// its own: the first drops are logged at once, the next ones only once
// the interval has passed, with their count; Close logs the rest.
func TestDropReportOncePerInterval(t *testing.T) {
	log, lines := captureLogger(t)
	r := &Recorder{cfg: Config{DropLogInterval: time.Minute, BufferSize: 1}, log: log}
	now := base
	r.now = func() time.Time { return now }
	w := &writer{}
	defer w.stopTimers()
	drop := func(n int) {
		r.dropped.Add(int64(n))
		r.unreported.Add(int64(n))
	}
	drop(5)
	r.reportDrops(w, false)
	drop(3)
	now = now.Add(10 * time.Second)
	r.reportDrops(w, false)
	drop(4)
	now = now.Add(10 * time.Second)
	r.reportDrops(w, false)
	if got := lines.lines("records dropped"); len(got) != 1 || !strings.Contains(got[0], "dropped=5 ") {
		t.Fatalf("within the interval: %q", got)
	}
	if w.reportC == nil {
		t.Error("no report armed for the end of the interval")
	}
	now = now.Add(41 * time.Second)
	r.reportDrops(w, false)
	got := lines.lines("records dropped")
	if len(got) != 2 || !strings.Contains(got[1], "dropped=7 ") || !strings.Contains(got[1], "droppedTotal=12 ") {
		t.Fatalf("after the interval: %q", got)
	}
	drop(1)
	r.reportDrops(w, true)
	if got := lines.lines("records dropped"); len(got) != 3 || !strings.Contains(got[2], "dropped=1 ") {
		t.Fatalf("final: %q", got)
	}
	r.reportDrops(w, true) // nothing new: no line
	if got := lines.lines("records dropped"); len(got) != 3 {
		t.Fatalf("a report without drops: %q", got)
	}
}

// lockSQLite holds an exclusive lock on the SQLite file through a
// connection of its own, so that every write of the recorder fails
// (busy) until unlock is called.
func lockSQLite(t *testing.T, path string) (unlock func()) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(t.Context(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	unlock = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
				t.Errorf("unlock: %v", err)
			}
			conn.Close()
			db.Close()
		})
	}
	t.Cleanup(unlock)
	return unlock
}

// TestFullBufferDrops holds the SQLite file locked: writes fail, the
// buffer fills, further records are dropped at once and counted, the
// drops are logged once (the interval is long), and once the lock goes
// everything buffered is written.
func TestFullBufferDrops(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	log, lines := captureLogger(t)
	r := open(t, Config{DSN: path, BufferSize: 10, BatchSize: 5, FlushInterval: 20 * time.Millisecond, WriteTimeout: 200 * time.Millisecond,
		MaxBackoff: 50 * time.Millisecond, DropLogInterval: time.Hour, Logger: log})
	unlock := lockSQLite(t, path)
	for i := range 100 {
		r.AfterExecution(exec("a", "s1", "fire", i, i, nil))
	}
	st := r.Stats()
	// At most the buffer and one batch in the writer's hands are kept.
	if st.Recorded != 100 || st.Dropped < 85 || st.Written != 0 {
		t.Errorf("with the database locked: %+v", st)
	}
	waitFor(t, 30*time.Second, "failed write", func() bool { return r.Stats().WriteErrors >= 2 })
	waitFor(t, 30*time.Second, "drop report", func() bool { return len(lines.lines("records dropped")) == 1 })
	for i := range 20 {
		r.HandleEvent(job.Event{Kind: job.EventPaused, Job: "a", Units: i})
	}
	if st := r.Stats(); st.Dropped < 105 {
		t.Errorf("events offered to a full buffer were not dropped: %+v", st)
	}
	if got := lines.lines("records dropped"); len(got) != 1 {
		t.Errorf("drops logged %d times within one interval: %q", len(got), got)
	}
	if got := lines.lines("writing to the database failed"); len(got) != 1 {
		t.Errorf("failed writes logged %d times within one interval: %q", len(got), got)
	}
	unlock()
	flush(t, r)
	st = r.Stats()
	if st.Recorded != st.Written+st.Dropped || st.Buffered != 0 || st.Written < 10 {
		t.Errorf("after the lock: %+v", st)
	}
	execs, events := countRows(t, r)
	if int64(execs+events) != st.Written {
		t.Errorf("%d + %d rows, %d written", execs, events, st.Written)
	}
	if len(lines.lines("writing again")) != 1 {
		t.Error(`no "writing again" line`)
	}
}

// TestCloseDeadline: with the database locked, Close ends at its
// deadline and counts what it could not write as dropped.
func TestCloseDeadline(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	r, err := Open(t.Context(), Config{DSN: path, FlushInterval: 10 * time.Millisecond, WriteTimeout: 100 * time.Millisecond,
		MaxBackoff: 20 * time.Millisecond, Logger: testlog.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	lockSQLite(t, path)
	for i := range 30 {
		r.AfterExecution(exec("a", "s1", "fire", i, i, nil))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = r.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), "30 records not written") {
		t.Errorf("close: %v", err)
	}
	if st := r.Stats(); st.Dropped != 30 || st.Written != 0 || st.Buffered != 0 {
		t.Errorf("stats: %+v", st)
	}
}

// TestClusterDatabaseDown runs a two-instance cluster with two jobs firing
// every second (one always fails), each instance recording its history,
// and takes the database away mid-run: for PostgreSQL the server stops,
// for SQLite another connection holds the file locked. The fires go on,
// the drops are counted and logged once, and once the database is back
// the later executions are written.
func TestClusterDatabaseDown(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "history.db")
		var unlock func()
		clusterDown(t, Config{Driver: DriverSQLite, DSN: path},
			func() { unlock = lockSQLite(t, path) },
			func() { unlock() })
	})
	t.Run("postgres", func(t *testing.T) {
		srv, err := pgtestStart(t)
		if err != nil {
			t.Fatal(err)
		}
		clusterDown(t, Config{Driver: DriverPostgres, DSN: srv.DSN},
			func() {
				if err := srv.Stop(); err != nil {
					t.Fatal(err)
				}
			},
			func() {
				if err := srv.Restart(testCtx(t)); err != nil {
					t.Fatal(err)
				}
			})
	})
}

func clusterDown(t *testing.T, cfg Config, stop, start func()) {
	ctx := testCtx(t)
	ns := fmt.Sprintf("hist%d", time.Now().UnixNano())
	cfg.BufferSize, cfg.BatchSize = 8, 4
	cfg.FlushInterval, cfg.WriteTimeout, cfg.MaxBackoff = 50*time.Millisecond, 500*time.Millisecond, 200*time.Millisecond
	cfg.DropLogInterval = time.Hour
	var runs atomic.Int64
	type node struct {
		rec   *Recorder
		lines *logBuffer
	}
	var nodes []node
	for _, id := range []string{"n1", "n2"} {
		c := cfg
		var lines *logBuffer
		c.Logger, lines = captureLogger(t)
		rec := open(t, c)
		nodes = append(nodes, node{rec, lines})
		rc, err := zookeeper.Open(ctx, regcenter.Config{Servers: zc.Servers(), Namespace: ns, SessionTimeout: 4 * time.Second},
			regcenter.WithLogger(testlog.Logger(t)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rc.Close() })
		s, err := job.NewScheduler(rc, append([]job.Option{job.WithServerID(id), job.WithLogger(testlog.Logger(t))}, rec.SchedulerOptions()...)...)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"ok", "failing"} {
			err := s.Add(ctx, job.Config{Name: name, Cron: "* * * * * *", ShardingTotalCount: 2}, job.SimpleFunc(func(context.Context, job.ShardingContext) error {
				runs.Add(1)
				if name == "failing" {
					return fmt.Errorf("no stock for this item")
				}
				return nil
			}))
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		// Registered after the recorder's Close, so it runs first.
		t.Cleanup(func() {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := s.Shutdown(sctx); err != nil {
				t.Errorf("shutdown: %v", err)
			}
		})
	}
	query := func(f Filter) []Execution {
		p, err := nodes[0].rec.Query(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		return p.Executions
	}
	// Both jobs write history, the failures as failures.
	waitFor(t, 60*time.Second, "executions of both jobs written", func() bool {
		return len(query(Filter{Job: "failing", Failed: true})) > 0 && len(query(Filter{Job: "ok"})) > 0
	})
	if ok := query(Filter{Job: "ok", Failed: true}); len(ok) != 0 {
		t.Errorf("successes recorded as failures: %+v", ok)
	}
	stop()
	before := runs.Load()
	// The fires go on: 8 fires' worth of items while the database is away,
	// enough to overflow every buffer.
	waitFor(t, 60*time.Second, "runs with the database down", func() bool { return runs.Load() >= before+8*4 })
	for i, nd := range nodes {
		st := nd.rec.Stats()
		if st.Dropped == 0 || st.WriteErrors == 0 {
			t.Errorf("node %d with the database down: %+v", i, st)
		}
		if got := nd.lines.lines("records dropped"); len(got) != 1 {
			t.Errorf("node %d logged drops %d times in one interval: %q", i, len(got), got)
		}
	}
	start()
	back := time.Now()
	waitFor(t, 60*time.Second, "executions written after the database returned", func() bool {
		return len(query(Filter{Since: back, Limit: 10})) >= 4
	})
	for _, e := range query(Filter{Since: back, Limit: MaxLimit}) {
		if want := map[string]Result{"ok": ResultSuccess, "failing": ResultFailure}[e.Job]; e.Result != want || (e.Job == "failing") != (e.Error == "no stock for this item") {
			t.Errorf("after the return: %+v", e)
		}
	}
	for i, nd := range nodes {
		if got := nd.lines.lines("writing again"); len(got) != 1 {
			t.Errorf("node %d: %d \"writing again\" lines", i, len(got))
		}
	}
}
