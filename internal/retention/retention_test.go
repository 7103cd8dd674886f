package retention

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// The loop waits Interval after a pass, Soon after a pass that left rows,
// logs a failed pass, and stops when its context ends.
func TestLoop(t *testing.T) {
	var mu sync.Mutex
	var at []time.Time
	var buf bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	l := Loop{
		Interval: 80 * time.Millisecond, Soon: 5 * time.Millisecond, Timeout: time.Second,
		Log: slog.New(slog.NewTextHandler(&syncWriter{w: &buf, mu: &mu}, nil)), Name: "test",
		Pass: func(ctx context.Context) (bool, error) {
			if _, ok := ctx.Deadline(); !ok {
				t.Error("a pass has no deadline")
			}
			mu.Lock()
			defer mu.Unlock()
			at = append(at, time.Now())
			switch len(at) {
			case 1, 2:
				return true, nil // more: the next pass comes Soon
			case 3:
				return true, errors.New("boom") // a failed pass waits Interval
			case 4:
				cancel()
			}
			return false, nil
		},
	}
	start := time.Now()
	go func() { l.Run(ctx); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the loop did not stop when its context ended")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(at) != 4 {
		t.Fatalf("%d passes, want 4", len(at))
	}
	if d := at[0].Sub(start); d < 80*time.Millisecond {
		t.Errorf("first pass after %v, want an Interval", d)
	}
	if d := at[2].Sub(at[0]); d >= 80*time.Millisecond {
		t.Errorf("passes 2 and 3 came %v after the first, want Soon each", d)
	}
	if d := at[3].Sub(at[2]); d < 80*time.Millisecond {
		t.Errorf("the pass after a failure came after %v, want an Interval", d)
	}
	if got := buf.String(); strings.Count(got, "test: retention failed") != 1 || !strings.Contains(got, "boom") {
		t.Errorf("log: %q, want one failure with its error", got)
	}
}

type syncWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// DeleteChunks deletes a batch a statement, stops at a short one, and at
// MaxChunks statements says more are left.
func TestDeleteChunks(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)`); err != nil {
		t.Fatal(err)
	}
	insert := func(n int) {
		for i := range n {
			if _, err := db.ExecContext(ctx, `INSERT INTO t (v) VALUES (?)`, i); err != nil {
				t.Fatal(err)
			}
		}
	}
	stmt := `DELETE FROM t WHERE id IN (SELECT id FROM t WHERE v >= ? LIMIT ?)`
	for _, c := range []struct {
		rows, batch int
		want        int64
		more        bool
	}{
		{rows: 7, batch: 3, want: 7, more: false},
		{rows: 6, batch: 3, want: 6, more: false}, // the third statement deletes none
		{rows: MaxChunks*2 + 5, batch: 2, want: MaxChunks * 2, more: true},
	} {
		t.Run(fmt.Sprintf("%d rows, batch %d", c.rows, c.batch), func(t *testing.T) {
			if _, err := db.ExecContext(ctx, `DELETE FROM t`); err != nil {
				t.Fatal(err)
			}
			insert(c.rows)
			var n int64
			more, err := DeleteChunks(ctx, db, &n, stmt, c.batch, 0)
			if err != nil {
				t.Fatal(err)
			}
			if n != c.want || more != c.more {
				t.Errorf("deleted %d, more %v; want %d, %v", n, more, c.want, c.more)
			}
		})
	}
	var n int64
	if _, err := DeleteChunks(ctx, db, &n, `DELETE FROM nowhere WHERE ? AND ?`, 1, 0); err == nil {
		t.Error("no error from a statement that fails")
	}
}
