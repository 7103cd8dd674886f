package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
)

// TestRecordAndRead records executions of every result and events of
// every kind (including one package job may add later) and reads them
// back as they were given.
func TestRecordAndRead(t *testing.T) {
	eachDB(t, func(t *testing.T, cfg Config) {
		cfg.MaxErrorLength = 40
		r := open(t, cfg)
		long := "line one\nline two\x00 and " + strings.Repeat("x", 100)
		r.AfterExecution(exec("orders", "s1", "fire", 0, 0, nil))
		r.AfterExecution(exec("orders", "s1", "fire", 1, 0, errors.New(long)))
		r.AfterExecution(exec("orders", "s2", "failover", 2, 0, fmt.Errorf("item 2: %w after 1s", job.ErrExecutionTimeout)))
		r.AfterExecution(exec("orders", "s2", "trigger", 3, 0, context.DeadlineExceeded))
		kinds := []job.EventKind{job.EventAlarm, job.EventAlarmCleared, job.EventUnplaced, job.EventDraining, job.EventDrained,
			job.EventUndrained, job.EventOffline, job.EventOnline, job.EventPeerOffline, job.EventPeerOnline,
			job.EventRegistered, job.EventStopped, job.EventPaused, job.EventResumed, job.EventDisabled, job.EventEnabled,
			job.EventConfigChanged, job.EventResharded, job.EventLeader, "a-kind-from-the-future"}
		for i, k := range kinds {
			r.HandleEvent(job.Event{Kind: k, Server: "s1", Job: "orders", Units: i, Threshold: 7, Peer: "s9",
				Detail: "detail " + string(k), Err: errors.New("probe\nfailed"), At: base.Add(time.Duration(i) * time.Second)})
		}
		flush(t, r)
		st := r.Stats()
		if want := int64(4 + len(kinds)); st.Recorded != want || st.Written != want || st.Dropped != 0 || st.Buffered != 0 {
			t.Errorf("stats %+v, want %d recorded and written", st, want)
		}
		p, err := r.Query(t.Context(), Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Executions) != 4 || p.Next != "" {
			t.Fatalf("page: %+v", p)
		}
		byItem := map[int]Execution{}
		for _, e := range p.Executions {
			byItem[e.Item] = e
		}
		e0 := byItem[0]
		if e0.Job != "orders" || e0.Server != "s1" || e0.Kind != "fire" || e0.TaskID != fmt.Sprintf("orders@%d", base.Unix()) ||
			!e0.FireTime.Equal(base) || !e0.Start.Equal(base.Add(3*time.Millisecond)) || e0.Duration() != 247*time.Millisecond ||
			e0.Result != ResultSuccess || e0.Error != "" || e0.ID <= 0 {
			t.Errorf("execution 0: %+v", e0)
		}
		if e := byItem[1]; e.Result != ResultFailure || e.Error != "line one line two and xxxxxxxxxxxxxxx..." {
			t.Errorf("execution 1: %s %q", e.Result, e.Error)
		}
		if e := byItem[2]; e.Result != ResultTimeout || e.Kind != "failover" || e.Server != "s2" {
			t.Errorf("execution 2: %+v", e)
		}
		if e := byItem[3]; e.Result != ResultTimeout {
			t.Errorf("execution 3 (deadline exceeded): %+v", e)
		}
		ep, err := r.QueryEvents(t.Context(), Filter{Limit: MaxLimit})
		if err != nil {
			t.Fatal(err)
		}
		if len(ep.Events) != len(kinds) {
			t.Fatalf("%d events, want %d", len(ep.Events), len(kinds))
		}
		for i, ev := range ep.Events {
			k := kinds[len(kinds)-1-i] // newest first
			if ev.Kind != string(k) || ev.Job != "orders" || ev.Server != "s1" || ev.Units != len(kinds)-1-i || ev.Threshold != 7 ||
				ev.Peer != "s9" || ev.Detail != "detail "+string(k) || ev.Error != "probe failed" || !ev.At.Equal(base.Add(time.Duration(len(kinds)-1-i)*time.Second)) {
				t.Errorf("event %d: %+v", i, ev)
			}
		}
		// The JSON shapes the HTTP handler and the command serve.
		js, err := p.Executions[0].MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{`"id":`, `"job":"orders"`, `"item":`, `"taskId":`, `"fireTime":"2026-05-04T10:00:00Z"`, `"kind":`,
			`"server":`, `"start":"2026-05-04T10:00:00.003Z"`, `"end":"2026-05-04T10:00:00.25Z"`, `"durationMs":247`, `"result":`, `"error":`} {
			if !strings.Contains(string(js), key) {
				t.Errorf("execution JSON %s lacks %s", js, key)
			}
		}
	})
}

// seed records n executions: job a or b (alternating), server s1 or s2
// (every third on s2), kind trigger every fifth, failure every fourth,
// second i from base; and n events alike.
func seed(t *testing.T, r *Recorder, n int) {
	for i := range n {
		jobName, server, kind := "a", "s1", "fire"
		if i%2 == 1 {
			jobName = "b"
		}
		if i%3 == 0 {
			server = "s2"
		}
		if i%5 == 0 {
			kind = "trigger"
		}
		var err error
		if i%4 == 0 {
			err = errors.New("boom")
		}
		r.AfterExecution(exec(jobName, server, kind, i, i, err))
		r.HandleEvent(job.Event{Kind: job.EventKind(kind), Job: jobName, Server: server, Err: err, At: base.Add(time.Duration(i) * time.Second)})
	}
	flush(t, r)
}

// TestPagingAndFilters pages through executions and events newest first
// with every filter, and refuses bad filters.
func TestPagingAndFilters(t *testing.T) {
	eachDB(t, func(t *testing.T, cfg Config) {
		r := open(t, cfg)
		const n = 120
		seed(t, r, n)
		// All, in pages of 50: 50, 50, 20, newest first, no overlap.
		var items []int
		f := Filter{}
		for pages := 0; ; pages++ {
			p, err := r.Query(t.Context(), f)
			if err != nil {
				t.Fatal(err)
			}
			for i, e := range p.Executions {
				items = append(items, e.Item)
				if i > 0 && e.ID >= p.Executions[i-1].ID {
					t.Fatalf("page not newest first: %d after %d", e.ID, p.Executions[i-1].ID)
				}
			}
			if p.Next == "" {
				if pages != 2 || len(p.Executions) != 20 {
					t.Errorf("last page %d has %d rows", pages, len(p.Executions))
				}
				break
			}
			if len(p.Executions) != DefaultLimit {
				t.Fatalf("page %d: %d rows", pages, len(p.Executions))
			}
			f.Before = p.Next
		}
		if len(items) != n || items[0] != n-1 || items[n-1] != 0 {
			t.Errorf("paged %d items, first %d last %d", len(items), items[0], items[len(items)-1])
		}
		count := func(f Filter, keep func(i int) bool) {
			t.Helper()
			want := 0
			for i := range n {
				if keep(i) {
					want++
				}
			}
			f.Limit = MaxLimit
			p, err := r.Query(t.Context(), f)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range p.Executions {
				if !keep(e.Item) {
					t.Errorf("filter %+v kept item %d", f, e.Item)
				}
			}
			if len(p.Executions) != want {
				t.Errorf("filter %+v: %d executions, want %d", f, len(p.Executions), want)
			}
			ep, err := r.QueryEvents(t.Context(), f)
			if err != nil {
				t.Fatal(err)
			}
			if len(ep.Events) != want {
				t.Errorf("filter %+v: %d events, want %d", f, len(ep.Events), want)
			}
		}
		at := func(i int) time.Time { return base.Add(time.Duration(i) * time.Second) }
		count(Filter{Job: "b"}, func(i int) bool { return i%2 == 1 })
		count(Filter{Server: "s2"}, func(i int) bool { return i%3 == 0 })
		count(Filter{Kind: "trigger"}, func(i int) bool { return i%5 == 0 })
		count(Filter{Failed: true}, func(i int) bool { return i%4 == 0 })
		count(Filter{Job: "a", Failed: true, Server: "s2"}, func(i int) bool { return i%2 == 0 && i%4 == 0 && i%3 == 0 })
		count(Filter{Since: at(100)}, func(i int) bool { return i >= 100 })
		count(Filter{Until: at(10)}, func(i int) bool { return i < 10 })
		count(Filter{Since: at(10), Until: at(20), Job: "a"}, func(i int) bool { return i >= 10 && i < 20 && i%2 == 0 })
		count(Filter{Job: "nope"}, func(int) bool { return false })
		// A small page of a filter, then the next one.
		p, err := r.Query(t.Context(), Filter{Job: "a", Limit: 7})
		if err != nil {
			t.Fatal(err)
		}
		p2, err := r.Query(t.Context(), Filter{Job: "a", Limit: 7, Before: p.Next})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Executions) != 7 || len(p2.Executions) != 7 || p2.Executions[0].Item != p.Executions[6].Item-2 {
			t.Errorf("pages of 7: %d, %d rows, next starts at %d", len(p.Executions), len(p2.Executions), p2.Executions[0].Item)
		}
		ep, err := r.QueryEvents(t.Context(), Filter{Limit: 100})
		if err != nil || len(ep.Events) != 100 || ep.Next == "" {
			t.Fatalf("events page: %d, next %q, %v", len(ep.Events), ep.Next, err)
		}
		ep2, err := r.QueryEvents(t.Context(), Filter{Limit: 100, Before: ep.Next})
		if err != nil || len(ep2.Events) != 20 || ep2.Next != "" {
			t.Fatalf("second events page: %d, next %q, %v", len(ep2.Events), ep2.Next, err)
		}
		for _, bad := range []struct {
			f    Filter
			name string
		}{
			{Filter{Limit: MaxLimit + 1}, "Limit"},
			{Filter{Limit: -1}, "Limit"},
			{Filter{Before: "x"}, "Before"},
			{Filter{Before: "-4"}, "Before"},
			{Filter{Since: at(5), Until: at(5)}, "Since"},
		} {
			if _, err := r.Query(t.Context(), bad.f); !errors.Is(err, ErrInvalidFilter) || !strings.Contains(err.Error(), bad.name) {
				t.Errorf("Query(%+v): %v, want ErrInvalidFilter naming %s", bad.f, err, bad.name)
			}
			if _, err := r.QueryEvents(t.Context(), bad.f); !errors.Is(err, ErrInvalidFilter) {
				t.Errorf("QueryEvents(%+v): %v, want ErrInvalidFilter", bad.f, err)
			}
		}
	})
}

func countRows(t *testing.T, r *Recorder) (execs, events int) {
	t.Helper()
	p, err := r.Query(t.Context(), Filter{Limit: MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := r.QueryEvents(t.Context(), Filter{Limit: MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	return len(p.Executions), len(ep.Events)
}

// TestRetention deletes rows beyond MaxRows, oldest first, and rows older
// than MaxAge, a bounded number per pass; and runs by itself.
func TestRetention(t *testing.T) {
	eachDB(t, func(t *testing.T, cfg Config) {
		cfg.MaxRows, cfg.RetentionBatch = 30, 2 // a pass deletes at most 20 × 2 rows per table and rule
		r := open(t, cfg)
		// Rows of now: the age rule (7 days) keeps them all.
		now := time.Now()
		for i := range 100 {
			e := exec("a", "s1", "fire", i, 0, nil)
			e.FireTime, e.Begin, e.End = now, now, now
			r.AfterExecution(e)
			r.HandleEvent(job.Event{Kind: job.EventLeader, Job: "a", Units: i, At: now})
		}
		flush(t, r)
		p, err := r.Prune(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if p.Executions != 40 || p.Events != 40 {
			t.Errorf("first pass deleted %+v, want 40 of each (bounded)", p)
		}
		p, err = r.Prune(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if p.Executions != 30 || p.Events != 30 {
			t.Errorf("second pass deleted %+v, want 30 of each", p)
		}
		execs, events := countRows(t, r)
		if execs != 30 || events != 30 {
			t.Errorf("%d executions and %d events kept, want 30", execs, events)
		}
		pg, err := r.Query(t.Context(), Filter{Limit: 1, Before: ""})
		if err != nil || pg.Executions[0].Item != 99 {
			t.Errorf("newest kept: %+v %v", pg.Executions, err)
		}
		last, err := r.Query(t.Context(), Filter{Limit: 30})
		if err != nil || last.Executions[29].Item != 70 {
			t.Errorf("oldest kept: %+v %v", last.Executions[29], err)
		}
		if st := r.Stats(); st.Pruned != 140 {
			t.Errorf("stats pruned %d, want 140", st.Pruned)
		}
	})
	eachDB(t, func(t *testing.T, cfg Config) {
		cfg.MaxAge, cfg.RetentionInterval = time.Hour, 20*time.Millisecond
		r := open(t, cfg)
		now := time.Now()
		for i := range 10 {
			when := now
			if i < 6 {
				when = now.Add(-2 * time.Hour)
			}
			e := exec("a", "s1", "fire", i, 0, nil)
			e.FireTime, e.Begin, e.End = when, when, when
			r.AfterExecution(e)
			r.HandleEvent(job.Event{Kind: job.EventPaused, Job: "a", Units: i, At: when})
		}
		flush(t, r)
		// The periodic pass, not a call of Prune.
		waitFor(t, 30*time.Second, "retention pass", func() bool { return r.Stats().Pruned >= 12 })
		execs, events := countRows(t, r)
		if execs != 4 || events != 4 {
			t.Errorf("%d executions and %d events kept, want the 4 recent ones", execs, events)
		}
	})
}

// TestGarbageRows reads rows with values the recorder never writes and
// gets ErrBadRow naming the table, the row and the column.
func TestGarbageRows(t *testing.T) {
	eachDB(t, func(t *testing.T, cfg Config) {
		r := open(t, cfg)
		r.AfterExecution(exec("a", "s1", "fire", 0, 0, nil))
		flush(t, r)
		driver := "sqlite"
		if cfg.Driver == DriverPostgres {
			driver = "pgx"
		}
		db, err := sql.Open(driver, cfg.DSN)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		st := &store{db: db, driver: cfg.Driver}
		insert := func(q string) int64 {
			t.Helper()
			var id int64
			if err := db.QueryRowContext(t.Context(), st.q(q+" RETURNING id")).Scan(&id); err != nil {
				t.Fatal(err)
			}
			return id
		}
		for _, c := range []struct {
			values, col string
		}{
			{"('a', 1, 't', 1, 'fire', 's', 1, 2, 'exploded', '')", "result"},
			{"('a', 1, 't', -1, 'fire', 's', 1, 2, 'success', '')", "fire_us"},
			{"('a', 1, 't', 1, 'fire', 's', 0, 2, 'success', '')", "start_us"},
			{"('a', 1, 't', 1, 'fire', 's', 1, 9223372036854775807, 'success', '')", "end_us"},
		} {
			id := insert("INSERT INTO " + execTable + " (job, item, task_id, fire_us, kind, server, start_us, end_us, result, error) VALUES " + c.values)
			_, err := r.Query(t.Context(), Filter{})
			if !errors.Is(err, ErrBadRow) || !strings.Contains(err.Error(), execTable+" row "+strconv.FormatInt(id, 10)+": "+c.col) {
				t.Errorf("%s: %v, want ErrBadRow naming row %d and %s", c.values, err, id, c.col)
			}
			if _, err := db.ExecContext(t.Context(), st.q("DELETE FROM "+execTable+" WHERE id = ?"), id); err != nil {
				t.Fatal(err)
			}
		}
		// The good row is still read once the bad ones are gone.
		if p, err := r.Query(t.Context(), Filter{}); err != nil || len(p.Executions) != 1 {
			t.Errorf("after the garbage: %+v %v", p, err)
		}
		id := insert("INSERT INTO " + eventTable + " (job, server, kind, units, threshold, peer, detail, error, at_us) VALUES ('a', 's', 'leader', 0, 0, '', '', '', 0)")
		if _, err := r.QueryEvents(t.Context(), Filter{}); !errors.Is(err, ErrBadRow) || !strings.Contains(err.Error(), eventTable+" row "+strconv.FormatInt(id, 10)+": at_us") {
			t.Errorf("event with time 0: %v", err)
		}
		if cfg.Driver == DriverSQLite {
			// SQLite keeps what it is given: text in an integer column.
			id := insert("INSERT INTO " + execTable + " (job, item, task_id, fire_us, kind, server, start_us, end_us, result, error) VALUES ('a', 'seven', 't', 1, 'fire', 's', 1, 2, 'success', '')")
			if _, err := r.Query(t.Context(), Filter{}); !errors.Is(err, ErrBadRow) || !strings.Contains(err.Error(), fmt.Sprintf("row %d: item is not an integer", id)) {
				t.Errorf("text item: %v", err)
			}
		}
	})
}

// TestReader reads what a recorder wrote, refuses a missing SQLite file
// and a database without the tables, and writes nothing.
func TestReader(t *testing.T) {
	eachDB(t, func(t *testing.T, cfg Config) {
		if _, err := OpenReader(t.Context(), cfg); !errors.Is(err, ErrNoDatabase) {
			t.Fatalf("reader before any recorder: %v, want ErrNoDatabase", err)
		}
		r := open(t, cfg)
		seed(t, r, 10)
		rd, err := OpenReader(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		p, err := rd.Query(t.Context(), Filter{Job: "a"})
		if err != nil || len(p.Executions) != 5 {
			t.Errorf("reader: %d executions, %v", len(p.Executions), err)
		}
		ep, err := rd.QueryEvents(t.Context(), Filter{Failed: true})
		if err != nil || len(ep.Events) != 3 {
			t.Errorf("reader: %d failed events, %v", len(ep.Events), err)
		}
		if cfg.Driver == DriverSQLite {
			if _, err := rd.st.db.ExecContext(t.Context(), "DELETE FROM "+execTable); err == nil {
				t.Error("the reader could delete rows")
			}
		}
	})
}

// TestClosed: after Close, records are dropped and counted, and Flush
// says the recorder is closed. The file's name has characters a URI
// reads otherwise.
func TestClosed(t *testing.T) {
	cfg := Config{DSN: t.TempDir() + "/odd #1?%41.db"}
	r, err := Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.AfterExecution(exec("a", "s1", "fire", 0, 0, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	r.AfterExecution(exec("a", "s1", "fire", 1, 0, nil))
	if st := r.Stats(); st.Recorded != 2 || st.Written != 1 || st.Dropped != 1 || st.Buffered != 0 {
		t.Errorf("stats after close: %+v", st)
	}
	if err := r.Flush(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("flush after close: %v", err)
	}
	if err := r.Close(ctx); err != nil {
		t.Errorf("second close: %v", err)
	}
	if _, err := os.Stat(cfg.DSN); err != nil {
		t.Errorf("the database is not at %s: %v", cfg.DSN, err)
	}
}
