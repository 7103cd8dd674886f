package history

import (
	"testing"
)

// TestAttemptColumnIsAdded opens a database made before executions had an
// attempt: a Reader reads its rows as first attempts; a Recorder adds the
// column, keeps the old rows (attempt 1), and records each attempt of a
// retried run with its number.
func TestAttemptColumnIsAdded(t *testing.T) {
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
		if err != nil || len(p.Executions) != 1 || p.Executions[0].Attempt != 1 {
			t.Fatalf("a reader of the old tables: %+v, %v", p, err)
		}
		if err := rd.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := Open(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		for attempt := 1; attempt <= 3; attempt++ {
			e := exec("retried", "s1", "fire", 0, 0, nil)
			e.Attempt = attempt
			r.AfterExecution(e)
		}
		flush(t, r)
		if err := r.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		rd, err = OpenReader(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		p, err = rd.Query(t.Context(), Filter{})
		if err != nil || len(p.Executions) != 4 {
			t.Fatalf("after the migration: %+v, %v", p, err)
		}
		for i, want := range []int{3, 2, 1, 1} { // newest first
			if got := p.Executions[i].Attempt; got != want {
				t.Errorf("row %d (%s): attempt %d, want %d", i, p.Executions[i].Job, got, want)
			}
		}
		if p.Executions[3].Job != "old" {
			t.Errorf("the oldest row is %s", p.Executions[3].Job)
		}
	})
}
