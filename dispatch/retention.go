package dispatch

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/shardjob/shardjob/internal/retention"
)

// Defaults and limits of the retention's fields of Config. The names and
// meanings are the execution history's (history.Config); the interval and
// the batch are shorter here, because a dispatcher ends far more tasks a
// minute than a history records runs, and on SQLite a DELETE holds the
// write lock its claims wait for.
const (
	// DefaultMaxAge is Config.MaxAge when it is 0.
	DefaultMaxAge = 7 * 24 * time.Hour
	// DefaultMaxRows is Config.MaxRows when it is 0.
	DefaultMaxRows = 1_000_000
	// DefaultRetentionInterval is Config.RetentionInterval when it is 0.
	DefaultRetentionInterval = time.Minute
	// DefaultRetentionBatch is Config.RetentionBatch when it is 0.
	DefaultRetentionBatch = 1000
	// MaxRetentionBatch bounds Config.RetentionBatch, so that no DELETE
	// holds many rows' locks (or SQLite's write lock) for long.
	MaxRetentionBatch = 100_000
)

// endedCond selects the ended tasks: the only ones the retention deletes.
// The partial index dispatch_tasks_ended has the same predicate, word for
// word, so that both stores match it.
const endedCond = `status IN ('finished', 'failed', 'cancelled')`

// retentionDefaults validates the retention's fields and fills in their
// defaults.
func (c *Config) retentionDefaults() error {
	switch {
	case c.MaxAge < 0:
		return fmt.Errorf("%w: MaxAge %v must not be negative (0: default %v)", ErrInvalid, c.MaxAge, DefaultMaxAge)
	case c.MaxAge == 0:
		c.MaxAge = DefaultMaxAge
	}
	switch {
	case c.MaxRows < 0:
		return fmt.Errorf("%w: MaxRows %d must not be negative (0: default %d)", ErrInvalid, c.MaxRows, DefaultMaxRows)
	case c.MaxRows == 0:
		c.MaxRows = DefaultMaxRows
	}
	switch {
	case c.RetentionInterval < 0:
		return fmt.Errorf("%w: RetentionInterval %v must not be negative (0: default %v)", ErrInvalid, c.RetentionInterval, DefaultRetentionInterval)
	case c.RetentionInterval == 0:
		c.RetentionInterval = DefaultRetentionInterval
	}
	switch {
	case c.RetentionBatch < 0 || c.RetentionBatch > MaxRetentionBatch:
		return fmt.Errorf("%w: RetentionBatch %d must be from 1 to %d (0: default %d)", ErrInvalid, c.RetentionBatch, MaxRetentionBatch, DefaultRetentionBatch)
	case c.RetentionBatch == 0:
		c.RetentionBatch = DefaultRetentionBatch
	}
	return nil
}

// Pruned counts the tasks one retention pass deleted.
type Pruned struct {
	// ByAge counts the tasks that had ended more than Config.MaxAge ago.
	ByAge int64
	// ByCount counts the tasks beyond the Config.MaxRows most recently
	// ended ones.
	ByCount int64
	// More tells that the pass stopped at its bound of statements with
	// tasks still to delete.
	More bool
}

// Prune runs a retention pass now: it deletes the ended tasks (finished,
// failed, cancelled) that ended more than Config.MaxAge ago, then those
// beyond the Config.MaxRows most recently ended, at most
// Config.RetentionBatch per statement and a bounded number of statements.
// A waiting or running task is never deleted. A started node runs a pass
// every Config.RetentionInterval; Prune lets a client-only dispatcher (or
// an operator's command) run one. Several nodes may prune at once: on
// PostgreSQL each skips the rows another is deleting.
func (d *Dispatcher) Prune(ctx context.Context) (Pruned, error) {
	if err := d.checkOpen(); err != nil {
		return Pruned{}, err
	}
	p, err := d.st.prune(ctx, micros(d.clock.Now().Add(-d.cfg.MaxAge)), d.cfg.MaxRows, d.cfg.RetentionBatch)
	d.stats.pruned.Add(p.ByAge + p.ByCount)
	return p, err
}

// retainLoop runs a retention pass every RetentionInterval until ctx ends;
// a pass that left tasks to delete is followed by the next one after a
// SweepInterval, so a backlog is worked off in short statements with the
// claims running between them.
func (d *Dispatcher) retainLoop(ctx context.Context) {
	retention.Loop{
		Interval: d.cfg.RetentionInterval, Soon: d.cfg.SweepInterval, Timeout: opTimeout,
		Log: d.log, Name: "dispatch",
		Pass: func(ctx context.Context) (bool, error) {
			p, err := d.Prune(ctx)
			if p.ByAge+p.ByCount > 0 {
				d.log.Info("dispatch: retention deleted ended tasks", "by_age", p.ByAge, "by_count", p.ByCount, "more", p.More)
			}
			return p.More, err
		},
	}.Run(ctx)
}

// prune deletes ended tasks that ended before cutoffUS, then those beyond
// the newest maxRows by end time, at most batch per statement. Every
// DELETE repeats endedCond outside its subquery: on PostgreSQL a row that
// changed while the statement waited for it is checked again there.
func (s *store) prune(ctx context.Context, cutoffUS, maxRows int64, batch int) (Pruned, error) {
	var p Pruned
	lock := ""
	if s.d == postgresDialect {
		lock = " FOR UPDATE SKIP LOCKED"
	}
	byAge := s.q(`DELETE FROM dispatch_tasks WHERE ` + endedCond + ` AND uuid IN (SELECT uuid FROM dispatch_tasks WHERE ` + endedCond + ` AND ended_at < ? LIMIT ?` + lock + `)`)
	more, err := retention.DeleteChunks(ctx, s.db, &p.ByAge, byAge, batch, cutoffUS)
	if err != nil {
		return p, fmt.Errorf("dispatch: delete tasks ended before %s: %w", fromMicros(cutoffUS).Format(time.RFC3339), err)
	}
	p.More = more
	var lastEnd int64
	var lastUUID string
	err = s.db.QueryRowContext(ctx, s.q(`SELECT ended_at, uuid FROM dispatch_tasks WHERE `+endedCond+` ORDER BY ended_at DESC, uuid DESC LIMIT 1 OFFSET ?`), maxRows).Scan(&lastEnd, &lastUUID)
	if errors.Is(err, sql.ErrNoRows) {
		return p, nil // no more than maxRows ended tasks
	}
	if err != nil {
		return p, fmt.Errorf("dispatch: find the %d most recently ended tasks: %w", maxRows, err)
	}
	byCount := s.q(`DELETE FROM dispatch_tasks WHERE ` + endedCond + ` AND uuid IN (SELECT uuid FROM dispatch_tasks WHERE ` + endedCond +
		` AND ended_at <= ? AND (ended_at < ? OR uuid <= ?) ORDER BY ended_at, uuid LIMIT ?` + lock + `)`)
	more, err = retention.DeleteChunks(ctx, s.db, &p.ByCount, byCount, batch, lastEnd, lastEnd, lastUUID)
	if err != nil {
		return p, fmt.Errorf("dispatch: delete ended tasks beyond the %d most recent: %w", maxRows, err)
	}
	p.More = p.More || more
	return p, nil
}
