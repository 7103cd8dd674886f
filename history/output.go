package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobtype"
)

// The executions' output column came after the first release of the
// tables: schema creates the tables as they were then, and migrate brings
// them, new or old, to the columns of today, inside createSchema's
// transaction (under its advisory lock on PostgreSQL, and SQLite's write
// lock), so that instances starting together add a column once.

// migrate adds the columns that are missing.
func (s *store) migrate(ctx context.Context, tx *sql.Tx) error {
	// output: the run's output as JSON text, '' when it recorded none.
	if s.driver == DriverPostgres {
		_, err := tx.ExecContext(ctx, `ALTER TABLE `+execTable+` ADD COLUMN IF NOT EXISTS output TEXT NOT NULL DEFAULT ''`)
		if err != nil {
			return fmt.Errorf("history: adding the output column: %w", err)
		}
		return nil
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('`+execTable+`') WHERE name = 'output'`).Scan(&n); err != nil {
		return fmt.Errorf("history: looking for the output column: %w", err)
	}
	if n == 0 {
		if _, err := tx.ExecContext(ctx, `ALTER TABLE `+execTable+` ADD COLUMN output TEXT NOT NULL DEFAULT ''`); err != nil {
			return fmt.Errorf("history: adding the output column: %w", err)
		}
	}
	return nil
}

// checkOutput makes a Reader read a database written before the output
// column was added, which it may not change: its executions have no
// output.
func (s *store) checkOutput(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, `SELECT output FROM `+execTable+` WHERE 1 = 0`)
	if err != nil {
		s.outputCol = "''"
		return nil
	}
	return rows.Close()
}

// storedOutput is what is stored of an execution's output: the JSON
// job.RecordOutput made, as it is. Anything else (an Execution built by
// other code) is kept as a JSON string of its text, cut to fit in
// job.MaxOutputSize bytes: text that is not JSON, not UTF-8 (which
// PostgreSQL's text refuses), or too long.
func storedOutput(out json.RawMessage) json.RawMessage {
	if len(out) == 0 {
		return nil
	}
	if len(out) <= job.MaxOutputSize && utf8.Valid(out) && json.Valid(out) {
		return out
	}
	return jobtype.Output(out[:min(len(out), job.MaxOutputSize)], true, false)
}

// output reads an output column: empty is no output; text over
// job.MaxOutputSize bytes is shown cut, as a JSON string of its start
// (truncated); text that is not JSON is a bad row.
func (r *rowReader) output(col string, v any) (json.RawMessage, bool) {
	s := r.str(col, v)
	switch {
	case s == "" || r.err != nil:
		return nil, false
	case len(s) > job.MaxOutputSize:
		return jobtype.Output([]byte(s[:job.MaxOutputSize]), true, false), true
	case !json.Valid([]byte(s)):
		r.fail(col, v, "is not JSON")
		return nil, false
	}
	return json.RawMessage(s), false
}
