// Package retention is the retention of the packages that keep rows in
// SQL (history, dispatch): the loop that runs a pass every interval, and
// the chunked DELETE a pass is made of. Each package keeps its own rules
// (which rows, which order); what runs them is written once here.
package retention

import (
	"context"
	"database/sql"
	"log/slog"
	"time"
)

// MaxChunks bounds the DELETEs of one pass per table and rule, so that a
// pass never holds the database for long; a pass that reaches it leaves
// the rest to the next one.
const MaxChunks = 20

// Loop runs Pass every Interval until the context given to Run ends.
type Loop struct {
	// Interval is the wait between the end of a pass and the next one.
	Interval time.Duration
	// Soon is the wait after a pass that reported rows still to delete,
	// so that a backlog is worked off in short passes; 0 means Interval.
	Soon time.Duration
	// Timeout bounds one pass.
	Timeout time.Duration
	// Pass deletes what the rules say; more tells that it stopped at its
	// bound with rows left. It logs what it deleted itself.
	Pass func(ctx context.Context) (more bool, err error)
	// Log receives a failed pass's warning, prefixed with Name.
	Log  *slog.Logger
	Name string
}

// Run runs the loop until ctx ends. A failed pass is logged, unless ctx
// ended, and the next one runs after Interval.
func (l Loop) Run(ctx context.Context) {
	t := time.NewTimer(l.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, l.Timeout)
		more, err := l.Pass(pctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			l.Log.Warn(l.Name+": retention failed; it runs again at the next interval", "err", err, "interval", l.Interval)
		}
		next := l.Interval
		if err == nil && more && l.Soon > 0 {
			next = l.Soon
		}
		t.Reset(next)
	}
}

// DeleteChunks runs stmt (args, then batch as its last argument) until a
// statement deletes fewer than batch rows or MaxChunks statements ran,
// adding the deleted rows to n. It tells whether the last statement
// deleted a full batch, so that more may be left. Each statement is a
// transaction of its own.
func DeleteChunks(ctx context.Context, db *sql.DB, n *int64, stmt string, batch int, args ...any) (more bool, err error) {
	args = append(args, batch)
	for range MaxChunks {
		res, err := db.ExecContext(ctx, stmt, args...)
		if err != nil {
			return false, err
		}
		k, err := res.RowsAffected()
		if err != nil {
			return false, err
		}
		*n += k
		if k < int64(batch) {
			return false, nil
		}
	}
	return true, nil
}
