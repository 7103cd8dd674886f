package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

// rawDB opens cfg's database directly, as another program would.
func rawDB(t *testing.T, cfg Config) (*sql.DB, *store) {
	t.Helper()
	driver := "sqlite"
	if cfg.Driver == DriverPostgres {
		driver = "pgx"
	}
	db, err := sql.Open(driver, cfg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, &store{db: db, driver: cfg.Driver}
}

// TestOutputIsKeptAndReadBack records executions with outputs of every
// shape and reads them back: JSON as it was given, nothing for none, and
// what is not job.RecordOutput's JSON as a JSON string that fits.
func TestOutputIsKeptAndReadBack(t *testing.T) {
	huge := json.RawMessage(`"` + strings.Repeat("y", job.MaxOutputSize) + `"`)
	cases := []struct {
		out  json.RawMessage
		want func(json.RawMessage) bool
	}{
		{json.RawMessage(`{"rows":12,"note":"<b>&</b>"}`), func(o json.RawMessage) bool { return string(o) == `{"rows":12,"note":"<b>&</b>"}` }},
		{nil, func(o json.RawMessage) bool { return o == nil }},
		{json.RawMessage("plain text\x00"), func(o json.RawMessage) bool { return string(o) == `"plain text\u0000"` }},
		{json.RawMessage("\"bad \xff utf-8\""), func(o json.RawMessage) bool { return string(o) == `"\"bad \ufffd utf-8\""` }},
		{huge, func(o json.RawMessage) bool {
			return len(o) <= job.MaxOutputSize && strings.HasPrefix(string(o), `"\"yyy`)
		}},
	}
	eachDB(t, func(t *testing.T, cfg Config) {
		r := open(t, cfg)
		for i, c := range cases {
			e := exec("out", "s1", "fire", i, i, nil)
			e.Output = c.out
			r.AfterExecution(e)
		}
		flush(t, r)
		if st := r.Stats(); st.Written != int64(len(cases)) {
			t.Fatalf("stats %+v, want %d written", st, len(cases))
		}
		p, err := r.Query(t.Context(), Filter{Job: "out"})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Executions {
			if !cases[e.Item].want(e.Output) || e.OutputTruncated {
				t.Errorf("item %d: output %.80s (truncated %v) from %.40q", e.Item, e.Output, e.OutputTruncated, cases[e.Item].out)
			}
		}
		// The API's JSON carries it as JSON.
		data, err := json.Marshal(p.Executions[len(p.Executions)-1])
		if err != nil || !strings.Contains(string(data), `"output":{"rows":12,"note":"\u003cb\u003e\u0026\u003c/b\u003e"}`) {
			t.Errorf("JSON %s, %v", data, err)
		}
	})
}

// TestOutputColumnIsAdded opens a database made before executions had an
// output: a Reader reads it as it is, without outputs; a Recorder adds the
// column, keeps the old rows, and records outputs from then on.
func TestOutputColumnIsAdded(t *testing.T) {
	eachDB(t, func(t *testing.T, cfg Config) {
		db, _ := rawDB(t, cfg)
		for _, stmt := range schema(cfg.Driver) {
			if _, err := db.ExecContext(t.Context(), stmt); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.ExecContext(t.Context(), "INSERT INTO "+execTable+" (job, item, task_id, fire_us, kind, server, start_us, end_us, result, error) VALUES ('old', 0, 't', 1, 'fire', 's', 1, 2, 'success', '')"); err != nil {
			t.Fatal(err)
		}
		rd, err := OpenReader(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		p, err := rd.Query(t.Context(), Filter{})
		if err != nil || len(p.Executions) != 1 || p.Executions[0].Output != nil {
			t.Fatalf("a reader of the old tables: %+v, %v", p, err)
		}
		if err := rd.Close(); err != nil {
			t.Fatal(err)
		}
		for range 2 { // the second Open finds the column there
			r, err := Open(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			e := exec("new", "s1", "fire", 0, 0, nil)
			e.Output = json.RawMessage(`[1,2]`)
			r.AfterExecution(e)
			flush(t, r)
			if err := r.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		rd, err = OpenReader(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		p, err = rd.Query(t.Context(), Filter{})
		if err != nil || len(p.Executions) != 3 {
			t.Fatalf("after the migration: %+v, %v", p, err)
		}
		if o := string(p.Executions[0].Output); o != `[1,2]` {
			t.Errorf("a new row's output %s", o)
		}
		if o := p.Executions[2].Output; p.Executions[2].Job != "old" || o != nil {
			t.Errorf("the old row: %s, output %s", p.Executions[2].Job, o)
		}
	})
}

// TestGarbageOutput reads output columns the recorder never writes: text
// that is not JSON is ErrBadRow naming the row and the column; JSON over
// the limit is shown cut, marked truncated.
func TestGarbageOutput(t *testing.T) {
	eachDB(t, func(t *testing.T, cfg Config) {
		r := open(t, cfg)
		r.AfterExecution(exec("a", "s1", "fire", 0, 0, nil))
		flush(t, r)
		db, st := rawDB(t, cfg)
		var id int64
		if err := db.QueryRowContext(t.Context(), "SELECT id FROM "+execTable).Scan(&id); err != nil {
			t.Fatal(err)
		}
		set := func(v string) {
			t.Helper()
			if _, err := db.ExecContext(t.Context(), st.q("UPDATE "+execTable+" SET output = ? WHERE id = ?"), v, id); err != nil {
				t.Fatal(err)
			}
		}
		set(`{"unfinished": `)
		_, err := r.Query(t.Context(), Filter{})
		if !errors.Is(err, ErrBadRow) || !strings.Contains(err.Error(), execTable+" row "+strconv.FormatInt(id, 10)+": output is not JSON") {
			t.Errorf("broken JSON: %v, want ErrBadRow naming row %d and output", err, id)
		}
		set(`["` + strings.Repeat("z", 3*job.MaxOutputSize) + `"]`)
		p, err := r.Query(t.Context(), Filter{})
		if err != nil || len(p.Executions) != 1 {
			t.Fatalf("oversized: %v", err)
		}
		e := p.Executions[0]
		if !e.OutputTruncated || len(e.Output) > job.MaxOutputSize || !strings.HasPrefix(string(e.Output), `"[\"zzz`) {
			t.Errorf("oversized: truncated %v, %d bytes starting %.10s", e.OutputTruncated, len(e.Output), e.Output)
		}
	})
}

// TestOutputOfARealRun: a job on a real ZooKeeper records an output; the
// recorder plugged into its scheduler keeps it, on both databases.
func TestOutputOfARealRun(t *testing.T) {
	eachDB(t, func(t *testing.T, cfg Config) {
		ctx := testCtx(t)
		rec := open(t, cfg)
		rc, err := zookeeper.Open(ctx, regcenter.Config{Servers: zc.Servers(), Namespace: fmt.Sprintf("histout%d", time.Now().UnixNano()), SessionTimeout: 4 * time.Second},
			regcenter.WithLogger(testlog.Logger(t)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rc.Close() })
		s, err := job.NewScheduler(rc, append([]job.Option{job.WithServerID("o1"), job.WithLogger(testlog.Logger(t))}, rec.SchedulerOptions()...)...)
		if err != nil {
			t.Fatal(err)
		}
		err = s.Add(ctx, job.Config{Name: "counted", Cron: "* * * * * *", ShardingTotalCount: 2}, job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
			return job.RecordOutput(ctx, map[string]int{"item": sc.Item, "rows": 10 * sc.Item})
		}))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { // registered after the recorder's Close, so it runs first
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := s.Shutdown(sctx); err != nil {
				t.Errorf("shutdown: %v", err)
			}
		})
		var p Page
		waitFor(t, 60*time.Second, "both items' executions written", func() bool {
			flush(t, rec)
			if p, err = rec.Query(ctx, Filter{Job: "counted"}); err != nil {
				t.Fatal(err)
			}
			return len(p.Executions) >= 2
		})
		for _, e := range p.Executions {
			if want := fmt.Sprintf(`{"item":%d,"rows":%d}`, e.Item, 10*e.Item); string(e.Output) != want || e.Result != ResultSuccess {
				t.Errorf("item %d: %s, output %s; want success with %s", e.Item, e.Result, e.Output, want)
			}
		}
	})
}
