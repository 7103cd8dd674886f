package history

import (
	"context"
	"database/sql"
	"fmt"
)

// The executions' attempt column (job.Config.Retry) came after the output
// column, and is added the same way (see migrate): inside createSchema's
// transaction, where missing; rows written before it read 1.

// migrateAttempt adds the attempt column when it is missing.
func (s *store) migrateAttempt(ctx context.Context, tx *sql.Tx) error {
	if s.driver == DriverPostgres {
		_, err := tx.ExecContext(ctx, `ALTER TABLE `+execTable+` ADD COLUMN IF NOT EXISTS attempt INTEGER NOT NULL DEFAULT 1`)
		if err != nil {
			return fmt.Errorf("history: adding the attempt column: %w", err)
		}
		return nil
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('`+execTable+`') WHERE name = 'attempt'`).Scan(&n); err != nil {
		return fmt.Errorf("history: looking for the attempt column: %w", err)
	}
	if n == 0 {
		if _, err := tx.ExecContext(ctx, `ALTER TABLE `+execTable+` ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1`); err != nil {
			return fmt.Errorf("history: adding the attempt column: %w", err)
		}
	}
	return nil
}

// checkAttempt makes a Reader read a database written before the attempt
// column was added, which it may not change: its executions were each a
// first attempt.
func (s *store) checkAttempt(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, `SELECT attempt FROM `+execTable+` WHERE 1 = 0`)
	if err != nil {
		s.attemptCol = "1"
		return nil
	}
	return rows.Close()
}
