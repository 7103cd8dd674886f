package historyhttp_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/history"
	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/jobhttp"
	"github.com/shardjob/shardjob/jobhttp/historyhttp"
	"github.com/shardjob/shardjob/listener"
)

// record writes n executions of job a (every other one failed) and n
// events to a new SQLite history, closes the recorder and returns the file.
func record(t *testing.T, n int) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn := filepath.Join(t.TempDir(), "history.db")
	rec, err := history.Open(ctx, history.Config{DSN: dsn, Logger: testlog.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	for i := range n {
		fire := base.Add(time.Duration(i) * time.Minute)
		var err error
		if i%2 == 1 {
			err = errors.New("the warehouse answered 503")
		}
		rec.AfterExecution(listener.Execution{Job: "a", TaskID: fmt.Sprint("t", i), ServerID: "s1", Item: i, Kind: "fire",
			FireTime: fire, Begin: fire, End: fire.Add(time.Millisecond), Err: err})
	}
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return dsn
}

func openReader(t *testing.T, dsn string) *history.Reader {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rd, err := history.OpenReader(ctx, history.Config{DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rd.Close(); err != nil {
			t.Errorf("close the reader: %v", err)
		}
	})
	return rd
}

func TestNewNil(t *testing.T) {
	if h := historyhttp.New(nil); h != nil {
		t.Errorf("New(nil) = %#v, want nil (the handler answers 404)", h)
	}
}

// The query parameters reach the history as its filter; a bad one is a
// 400 naming it, and nothing is read.
func TestQueries(t *testing.T) {
	h := historyhttp.New(openReader(t, record(t, 6)))
	ctx := t.Context()
	v, err := h.Executions(ctx, url.Values{"failed": {"1"}, "limit": {"2"}})
	if err != nil {
		t.Fatal(err)
	}
	p, ok := v.(history.Page)
	if !ok || len(p.Executions) != 2 || p.Next == "" || p.Executions[0].Item != 5 || p.Executions[1].Item != 3 {
		t.Fatalf("failed=1&limit=2: %#v", v)
	}
	v, err = h.Executions(ctx, url.Values{"failed": {"1"}, "before": {p.Next}})
	if p, ok := v.(history.Page); err != nil || !ok || len(p.Executions) != 1 || p.Executions[0].Item != 1 {
		t.Errorf("the next page: %#v, %v", v, err)
	}
	v, err = h.Events(ctx, url.Values{"job": {"a"}})
	if p, ok := v.(history.EventPage); err != nil || !ok || len(p.Events) != 0 {
		t.Errorf("events: %#v, %v", v, err)
	}
	for q, param := range map[string]string{
		"limit=0": "limit", "failed=yes": "failed", "since=yesterday": "since", "until=2026-13-01": "until",
		"before=abc": "before", "since=1h&until=2h": "since",
	} {
		vals, err := url.ParseQuery(q)
		if err != nil {
			t.Fatal(err)
		}
		for name, read := range map[string]func(context.Context, url.Values) (any, error){"Executions": h.Executions, "Events": h.Events} {
			v, err := read(ctx, vals)
			var se *jobhttp.StatusError
			if !errors.As(err, &se) || se.Code != http.StatusBadRequest || !errors.Is(err, history.ErrInvalidFilter) ||
				!strings.Contains(err.Error(), param+"=") || v != nil {
				t.Errorf("%s(%s): %v, %v; want a 400 naming %s", name, q, v, err, param)
			}
		}
	}
}

// A row the history cannot read back is a 500; a history that cannot be
// read at all is left to the handler (503).
func TestReadErrors(t *testing.T) {
	dsn := record(t, 1)
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), "INSERT INTO shardjob_history_executions (job, item, task_id, fire_us, kind, server, start_us, end_us, result, error) "+
		"VALUES ('a', 1, 't', 1, 'fire', 's', 1, 2, 'exploded', '')"); err != nil {
		t.Fatal(err)
	}
	rd := openReader(t, dsn)
	h := historyhttp.New(rd)
	_, err = h.Executions(t.Context(), url.Values{})
	var se *jobhttp.StatusError
	if !errors.As(err, &se) || se.Code != http.StatusInternalServerError || !errors.Is(err, history.ErrBadRow) {
		t.Errorf("a bad row: %v, want a 500 that is history.ErrBadRow", err)
	}

	closed := openReader(t, record(t, 1))
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = historyhttp.New(closed).Executions(t.Context(), url.Values{})
	if err == nil || errors.As(err, &se) {
		t.Errorf("a closed reader: %v, want an error without a status of its own", err)
	}
}
