package dispatch

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/shardjob/shardjob/internal/sqldb"
)

//go:embed migrations
var migrationFS embed.FS

// dialect is what differs between SQLite and PostgreSQL.
type dialect int

const (
	sqliteDialect dialect = iota
	postgresDialect
)

func (d dialect) String() string {
	if d == postgresDialect {
		return "postgres"
	}
	return "sqlite"
}

// store is the SQL behind a Dispatcher: every method is one transaction.
type store struct {
	db  *sql.DB
	d   dialect
	drv sqldb.Driver // the database's client, as its package registered it
}

// q rewrites ?-placeholders for the dialect ($1, $2... on PostgreSQL).
func (s *store) q(query string) string {
	if s.d != postgresDialect {
		return query
	}
	return sqldb.Postgres(query)
}

// forUpdate is the row-lock suffix; SQLite's write transactions
// (BEGIN IMMEDIATE) are serialized already.
func (s *store) forUpdate() string {
	if s.d == postgresDialect {
		return " FOR UPDATE"
	}
	return ""
}

// tx runs fn in one transaction, committing if it returns nil.
func (s *store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("dispatch: begin: %w", err)
	}
	if err := fn(tx); err != nil {
		if rerr := tx.Rollback(); rerr != nil && !errors.Is(rerr, sql.ErrTxDone) {
			return errors.Join(err, fmt.Errorf("dispatch: rollback: %w", rerr))
		}
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("dispatch: commit: %w", err)
	}
	return nil
}

// migrate applies the embedded migrations not yet applied, each in its
// own transaction; on PostgreSQL an advisory lock keeps nodes that start
// together from applying one twice.
func (s *store) migrate(ctx context.Context) error {
	dir := "migrations/" + s.d.String()
	entries, err := fs.ReadDir(migrationFS, dir)
	if err != nil {
		return fmt.Errorf("dispatch: migrations: %w", err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		v, err := strconv.Atoi(strings.SplitN(e.Name(), "_", 2)[0])
		if err != nil {
			return fmt.Errorf("dispatch: migration %s: name must start with a version number", e.Name())
		}
		body, err := migrationFS.ReadFile(dir + "/" + e.Name())
		if err != nil {
			return fmt.Errorf("dispatch: migration %s: %w", e.Name(), err)
		}
		err = s.tx(ctx, func(tx *sql.Tx) error {
			if s.d == postgresDialect {
				if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7271001)`); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS dispatch_schema (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
				return err
			}
			var n int
			if err := tx.QueryRowContext(ctx, s.q(`SELECT count(*) FROM dispatch_schema WHERE version = ?`), v).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			for _, stmt := range strings.Split(string(body), ";") {
				if strings.TrimSpace(stripComments(stmt)) == "" {
					continue
				}
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return fmt.Errorf("%w in %q", err, strings.TrimSpace(stmt))
				}
			}
			_, err := tx.ExecContext(ctx, s.q(`INSERT INTO dispatch_schema (version, applied_at) VALUES (?, ?)`), v, time.Now().UnixMicro())
			return err
		})
		if err != nil {
			return fmt.Errorf("dispatch: migration %s: %w", e.Name(), err)
		}
	}
	return nil
}

func stripComments(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "--") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

const taskCols = `uuid, worker, external_id, info, expected_start, acceptable_start, run_at, status, attempts, max_retries, timeout_us, lease_owner, deadline, late, created_at, started_at, ended_at, last_error, trace_context`

type scanner interface{ Scan(...any) error }

func scanTask(r scanner) (Task, error) {
	var t Task
	var exp, acc, runAt, timeout, deadline, created, started, ended int64
	var late int
	var status string
	var traceCtx sql.NullString
	err := r.Scan(&t.UUID, &t.Worker, &t.ExternalID, &t.Info, &exp, &acc, &runAt, &status, &t.Attempt, &t.MaxRetries, &timeout, &t.Node, &deadline, &late, &created, &started, &ended, &t.LastError, &traceCtx)
	if err != nil {
		return Task{}, err
	}
	t.traceCtx = traceCtx.String
	t.Status = Status(status)
	t.ExpectedStart = fromMicros(exp)
	t.AcceptableStart = fromMicros(acc)
	t.RunAt = fromMicros(runAt)
	t.Timeout = time.Duration(timeout) * time.Microsecond
	t.Deadline = fromMicros(deadline)
	t.Late = late != 0
	t.CreatedAt = fromMicros(created)
	t.StartedAt = fromMicros(started)
	t.EndedAt = fromMicros(ended)
	return t, nil
}

// queryTasks runs a query whose rows are taskCols and scans them.
func queryTasks(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string, args ...any) ([]Task, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func fromMicros(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

func (s *store) setGlobalMax(ctx context.Context, n int) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.q(`UPDATE dispatch_global SET max_running = ? WHERE id = 1`), n)
		return err
	})
}

func (s *store) global(ctx context.Context) (Global, error) {
	var g Global
	err := s.db.QueryRowContext(ctx, `SELECT max_running, running - COALESCE((SELECT sum(n) FROM dispatch_freed), 0) FROM dispatch_global WHERE id = 1`).Scan(&g.MaxRunning, &g.Running)
	if err != nil {
		return Global{}, fmt.Errorf("dispatch: read global row: %w", err)
	}
	return g, nil
}

// putWorker creates or updates a worker. It takes the global row's lock
// first, as every writer of a cap or counter does, so a cap never changes
// under a claim that read it.
func (s *store) putWorker(ctx context.Context, w Worker, maxWorkers int) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		if err := lockGlobal(ctx, tx, s); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q(`UPDATE dispatch_workers SET max_running = ?, late_policy = ?, webhook_url = ?, webhook_secret = ? WHERE name = ?`),
			w.MaxRunning, string(w.LatePolicy), w.WebhookURL, w.WebhookSecret, w.Name)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		// A new worker: counted under the global row's lock (SQLite:
		// the write transaction), so two nodes adding the last ones
		// cannot both pass the limit.
		var count int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM dispatch_workers`).Scan(&count); err != nil {
			return err
		}
		if count >= maxWorkers {
			return fmt.Errorf("%w: %d workers exist, the limit (Config.MaxWorkers); %q is not added", ErrTooManyWorkers, count, w.Name)
		}
		_, err = tx.ExecContext(ctx, s.q(`INSERT INTO dispatch_workers (name, max_running, running, late_policy, webhook_url, webhook_secret) VALUES (?, ?, 0, ?, ?, ?)`),
			w.Name, w.MaxRunning, string(w.LatePolicy), w.WebhookURL, w.WebhookSecret)
		return err
	})
}

// workerCols reads a worker; its running count is the stored one less the
// slots freed since the last claim (dispatch_freed).
const workerCols = `name, max_running, running - COALESCE((SELECT sum(f.n) FROM dispatch_freed f WHERE f.worker = dispatch_workers.name), 0), late_policy, webhook_url, webhook_secret`

func scanWorker(r scanner) (Worker, error) {
	var w Worker
	var p string
	err := r.Scan(&w.Name, &w.MaxRunning, &w.Running, &p, &w.WebhookURL, &w.WebhookSecret)
	w.LatePolicy = LatePolicy(p)
	return w, err
}

func (s *store) worker(ctx context.Context, name string) (Worker, error) {
	w, err := scanWorker(s.db.QueryRowContext(ctx, s.q(`SELECT `+workerCols+` FROM dispatch_workers WHERE name = ?`), name))
	if errors.Is(err, sql.ErrNoRows) {
		return Worker{}, fmt.Errorf("%w: %q", ErrUnknownWorker, name)
	}
	if err != nil {
		return Worker{}, fmt.Errorf("dispatch: read worker %q: %w", name, err)
	}
	return w, nil
}

func (s *store) workers(ctx context.Context) ([]Worker, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+workerCols+` FROM dispatch_workers ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("dispatch: list workers: %w", err)
	}
	defer rows.Close()
	var out []Worker
	for rows.Next() {
		w, err := scanWorker(rows)
		if err != nil {
			return nil, fmt.Errorf("dispatch: list workers: %w", err)
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// assign inserts tasks, returning for each either the new row or the
// existing one with the same worker and external id.
func (s *store) assign(ctx context.Context, tasks []Task, notify bool) ([]Task, error) {
	out := make([]Task, len(tasks))
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var exists int
		if err := tx.QueryRowContext(ctx, s.q(`SELECT count(*) FROM dispatch_workers WHERE name = ?`), tasks[0].Worker).Scan(&exists); err != nil {
			return err
		}
		if exists == 0 {
			return fmt.Errorf("%w: %q", ErrUnknownWorker, tasks[0].Worker)
		}
		const chunk = 400
		for off := 0; off < len(tasks); off += chunk {
			part := tasks[off:min(off+chunk, len(tasks))]
			args := make([]any, 0, len(part)*12)
			var tc traceArg
			for _, t := range part {
				args = append(args, t.UUID, t.Worker, t.ExternalID, t.Info, micros(t.ExpectedStart), micros(t.AcceptableStart),
					micros(t.ExpectedStart), string(StatusWaiting), t.MaxRetries, t.Timeout.Microseconds(), micros(t.CreatedAt), tc.of(t.traceCtx))
			}
			vals := strings.TrimSuffix(strings.Repeat(`(?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, '', 0, 0, ?, 0, 0, '', ?), `, len(part)), ", ")
			rows, err := tx.QueryContext(ctx, s.q(`INSERT INTO dispatch_tasks (`+taskCols+`) VALUES `+vals+` ON CONFLICT (worker, external_id) DO NOTHING RETURNING uuid`), args...)
			if err != nil {
				return err
			}
			created := map[string]bool{}
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return err
				}
				created[id] = true
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			var old []any
			oldAt := map[string]int{}
			for i, t := range part {
				if created[t.UUID] {
					t.Status, t.RunAt = StatusWaiting, t.ExpectedStart
					out[off+i] = t
					continue
				}
				old = append(old, t.ExternalID)
				oldAt[t.ExternalID] = off + i
			}
			if len(old) == 0 {
				continue
			}
			existing, err := queryTasks(ctx, tx, s.q(`SELECT `+taskCols+` FROM dispatch_tasks WHERE worker = ? AND external_id IN (`+placeholders(len(old))+`)`), append([]any{tasks[0].Worker}, old...)...)
			if err != nil {
				return err
			}
			for _, t := range existing {
				out[oldAt[t.ExternalID]] = t
			}
		}
		if notify {
			_, err := tx.ExecContext(ctx, `SELECT pg_notify('`+notifyChannel+`', '')`)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// traceArg is the trace_context argument of the tasks an assign inserts:
// NULL for a task without one, and the tasks of one Assign, which share
// theirs, share one boxed value.
type traceArg struct {
	last string
	arg  any
}

func (a *traceArg) of(traceCtx string) any {
	if traceCtx == "" {
		return nil
	}
	if a.arg == nil || traceCtx != a.last {
		a.last, a.arg = traceCtx, traceCtx
	}
	return a.arg
}

// notifyChannel is the PostgreSQL LISTEN/NOTIFY channel that wakes fetchers.
const notifyChannel = "shardjob_dispatch"

// claimed is a claim round's result.
type claimed struct {
	started    []Task // now running under the caller's lease
	lateFailed []Task // failed instead of started: late, and the worker's policy says fail
	considered int    // candidates the round looked at (started + lateFailed)
}

// claim starts up to limit waiting tasks in one transaction: the globally
// earliest acceptable starts (ties: expected start, uuid) among tasks with
// run_at <= now, as many as the global and each worker's free slots allow.
// The global row is locked first, so claims from every node are serialized
// and each one sees the latest counters; the counters are raised in the
// same transaction with a guard, so no cap is ever exceeded. On PostgreSQL
// that is one round trip (claimPG); on SQLite, whose write transactions
// are serialized already, several statements in one transaction.
func (s *store) claim(ctx context.Context, node string, now time.Time, limit int) (claimed, error) {
	if s.d == postgresDialect {
		return s.claimPG(ctx, node, now, limit)
	}
	var c claimed
	nowUS := now.UnixMicro()
	err := s.tx(ctx, func(tx *sql.Tx) error {
		c = claimed{}
		// The global row and this node's lease in one statement. The
		// lease must exist and be unexpired: reapers are serialized with
		// this transaction, so it cannot lapse before it commits.
		var g Global
		var expires int64
		if err := tx.QueryRowContext(ctx, `SELECT g.max_running, g.running, COALESCE(n.expires, 0) FROM dispatch_global g
LEFT JOIN dispatch_nodes n ON n.id = ? WHERE g.id = 1`, node).Scan(&g.MaxRunning, &g.Running, &expires); err != nil {
			return err
		}
		if expires <= nowUS {
			return fmt.Errorf("%w: lease %s is gone or expired; not claiming", ErrStaleLease, node)
		}
		free := g.MaxRunning - g.Running
		if free <= 0 {
			return nil
		}
		if free < limit {
			limit = free
		}
		cs, err := s.candidates(ctx, tx, nowUS, limit)
		if err != nil {
			return err
		}
		var start, fail []any
		perWorker := map[string]int{}
		for _, c := range cs {
			if nowUS > c.acceptable && c.policy == LateFail {
				fail = append(fail, c.uuid)
				continue
			}
			start = append(start, c.uuid)
			perWorker[c.worker]++
		}
		c.considered = len(start) + len(fail)
		if len(start) > 0 {
			names := make([]string, 0, len(perWorker))
			for w := range perWorker {
				names = append(names, w)
			}
			sort.Strings(names)
			if err := bump(ctx, tx, s.q(`UPDATE dispatch_global SET running = running + ? WHERE id = 1 AND running + ? <= max_running`), len(start), len(start)); err != nil {
				return fmt.Errorf("dispatch: take global slots: %w", err)
			}
			if err := s.addWorkers(ctx, tx, names, perWorker, 1); err != nil {
				return fmt.Errorf("dispatch: take worker slots: %w", err)
			}
			args := append([]any{node, nowUS, nowUS, nowUS}, start...)
			started, err := queryTasks(ctx, tx, s.q(`UPDATE dispatch_tasks SET status = 'running', attempts = attempts + 1, lease_owner = ?, started_at = ?,
    deadline = ? + timeout_us, late = CASE WHEN acceptable_start < ? THEN 1 ELSE 0 END, ended_at = 0
WHERE status = 'waiting' AND uuid IN (`+placeholders(len(start))+`) RETURNING `+taskCols), args...)
			if err != nil {
				return err
			}
			c.started = append(c.started, started...)
			if len(c.started) != len(start) {
				return fmt.Errorf("dispatch: claim: %d of %d candidates changed under the lock", len(start)-len(c.started), len(start))
			}
		}
		if len(fail) > 0 {
			args := append([]any{nowUS, nowUS}, fail...)
			failed, err := queryTasks(ctx, tx, s.q(`UPDATE dispatch_tasks SET status = 'failed', ended_at = ?, late = 1,
    last_error = 'late: not started by its acceptable start, and the worker''s late policy is fail'
WHERE status = 'waiting' AND acceptable_start < ? AND uuid IN (`+placeholders(len(fail))+`) RETURNING `+taskCols), args...)
			if err != nil {
				return err
			}
			c.lateFailed = append(c.lateFailed, failed...)
		}
		return nil
	})
	return c, err
}

// candidate is a task a claim round may start.
type candidate struct {
	uuid, worker         string
	acceptable, expected int64
	policy               LatePolicy
}

// candidates returns, in EDF order (acceptable start, expected start,
// uuid), the first limit startable tasks such that no worker gets more
// than its free slots: exactly what a greedy pass over all startable tasks
// in that order would take. This is SQLite's: it asks each worker with
// free slots for its head through the index and merges (PostgreSQL does it
// inside pgClaim, with LATERAL).
func (s *store) candidates(ctx context.Context, tx *sql.Tx, nowUS int64, limit int) ([]candidate, error) {
	var out []candidate
	scan := func(rows *sql.Rows) error {
		defer rows.Close()
		for rows.Next() {
			var c candidate
			var p string
			if err := rows.Scan(&c.uuid, &c.acceptable, &c.expected, &c.worker, &p); err != nil {
				return err
			}
			c.policy = LatePolicy(p)
			out = append(out, c)
		}
		return rows.Err()
	}
	rows, err := tx.QueryContext(ctx, `SELECT name, max_running - running, late_policy FROM dispatch_workers WHERE running < max_running ORDER BY name`)
	if err != nil {
		return nil, err
	}
	type free struct {
		name, policy string
		n            int
	}
	var ws []free
	for rows.Next() {
		var f free
		if err := rows.Scan(&f.name, &f.n, &f.policy); err != nil {
			rows.Close()
			return nil, err
		}
		ws = append(ws, f)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, w := range ws {
		rows, err := tx.QueryContext(ctx, sqliteHeads, w.policy, w.name, nowUS, min(w.n, limit))
		if err != nil {
			return nil, err
		}
		if err := scan(rows); err != nil {
			return nil, err
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.acceptable != b.acceptable {
			return a.acceptable < b.acceptable
		}
		if a.expected != b.expected {
			return a.expected < b.expected
		}
		return a.uuid < b.uuid
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// sqliteHeads is one worker's first startable tasks in EDF order (its
// late policy, name, the time now and how many are the arguments), read
// in the order of the index dispatch_tasks_waiting, unsorted. SQLite's
// planner cannot use dispatch_tasks_live here (it does not take status =
// 'waiting' to imply that index's IN), so SQLite keeps the waiting index.
const sqliteHeads = `SELECT uuid, acceptable_start, expected_start, worker, ? FROM dispatch_tasks
WHERE worker = ? AND status = 'waiting' AND run_at <= ?
ORDER BY acceptable_start, expected_start, uuid LIMIT ?`

// addWorkers adds sign·n[w] to the running count of each worker w in one
// statement, guarded: taking slots may not pass a worker's cap, giving
// them back may not go below zero. Every named row must change, or the
// transaction is aborted.
func (s *store) addWorkers(ctx context.Context, tx *sql.Tx, names []string, n map[string]int, sign int) error {
	var delta strings.Builder
	args := make([]any, 0, 5*len(names))
	delta.WriteString("CASE name")
	for _, w := range names {
		delta.WriteString(" WHEN ? THEN CAST(? AS INTEGER)")
		args = append(args, w, sign*n[w])
	}
	delta.WriteString(" END")
	guard := "running + " + delta.String() + " <= max_running"
	if sign < 0 {
		guard = "running + " + delta.String() + " >= 0"
	}
	all := append(append([]any{}, args...), args...)
	for _, w := range names {
		all = append(all, w)
	}
	res, err := tx.ExecContext(ctx, s.q(`UPDATE dispatch_workers SET running = running + `+delta.String()+` WHERE `+guard+` AND name IN (`+placeholders(len(names))+`)`), all...)
	if err != nil {
		return err
	}
	got, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if int(got) != len(names) {
		return fmt.Errorf("the guard failed for %d of %d workers: a cap or count changed under the claim", len(names)-int(got), len(names))
	}
	return nil
}

// bump runs a guarded counter update that must change exactly one row.
func bump(ctx context.Context, tx *sql.Tx, query string, args ...any) error {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n != 1 {
		return errors.New("the guard failed: a cap or counter changed under the claim")
	}
	return nil
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// nextRunAt is the earliest run_at of a waiting task after now, if any.
// On PostgreSQL each worker's earliest is read from dispatch_tasks_due
// (worker, run_at), one probe per worker (migration 007); SQLite reads
// dispatch_tasks_run_at.
func (s *store) nextRunAt(ctx context.Context, now time.Time) (time.Time, bool, error) {
	var v sql.NullInt64
	q := `SELECT min(run_at) FROM dispatch_tasks WHERE status = 'waiting' AND run_at > ?`
	if s.d == postgresDialect {
		q = pgNextRunAt
	}
	err := s.db.QueryRowContext(ctx, s.q(q), now.UnixMicro()).Scan(&v)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("dispatch: next start: %w", err)
	}
	if !v.Valid {
		return time.Time{}, false, nil
	}
	return fromMicros(v.Int64), true, nil
}

// lockTask reads one task under a row lock.
func (s *store) lockTask(ctx context.Context, tx *sql.Tx, uuid string) (Task, error) {
	t, err := scanTask(tx.QueryRowContext(ctx, s.q(`SELECT `+taskCols+` FROM dispatch_tasks WHERE uuid = ?`+s.forUpdate()), uuid))
	if errors.Is(err, sql.ErrNoRows) {
		return Task{}, fmt.Errorf("%w: %q", ErrUnknownTask, uuid)
	}
	return t, err
}

// freeSlots gives back one global and one worker slot per task; the global
// row first, as claim takes it, so the two never wait on each other.
func (s *store) freeSlots(ctx context.Context, tx *sql.Tx, tasks []Task) error {
	if len(tasks) == 0 {
		return nil
	}
	per := map[string]int{}
	for _, t := range tasks {
		per[t.Worker]++
	}
	if err := bump(ctx, tx, s.q(`UPDATE dispatch_global SET running = running - ? WHERE id = 1 AND running >= ?`), len(tasks), len(tasks)); err != nil {
		return fmt.Errorf("dispatch: free global slots: %w", err)
	}
	names := make([]string, 0, len(per))
	for w := range per {
		names = append(names, w)
	}
	sort.Strings(names)
	if err := s.addWorkers(ctx, tx, names, per, -1); err != nil {
		return fmt.Errorf("dispatch: free worker slots: %w", err)
	}
	return nil
}

// finishReq asks to finish one task; attempt 0 accepts whichever attempt
// runs, otherwise that attempt must be the running one.
type finishReq struct {
	uuid    string
	attempt int
}

// finishState is a task's state before a batch of finishes.
type finishState struct {
	status   Status
	attempt  int
	recorded bool // PostgreSQL: the batch's statement finished it
}

// errFinishedBefore is the outcome of a finish that names the attempt
// that finished the task already: its own earlier finish, committed while
// its answer was lost (a dropped connection, a timeout). The caller
// answers success and does nothing more.
var errFinishedBefore = errors.New("dispatch: this attempt's finish was recorded before")

// finishOutcomes tells each request its outcome (ErrUnknownTask,
// ErrAlreadyFinished, errFinishedBefore, ErrStaleLease, ErrNotRunning or
// nil), taking them in order against the tasks' states before the batch;
// done lists the requests that finish their task (at most one per task).
//
// A task's attempt number is kept when it finishes, so a finish naming
// that attempt is the same attempt's finish again (errFinishedBefore),
// and one naming another attempt is stale; a finish naming no attempt
// cannot tell a retry from a second finisher and gets ErrAlreadyFinished.
func finishOutcomes(reqs []finishReq, state map[string]*finishState) (errs []error, done []int) {
	errs = make([]error, len(reqs))
	for i, q := range reqs {
		t := state[q.uuid]
		switch {
		case t == nil:
			errs[i] = fmt.Errorf("%w: %q", ErrUnknownTask, q.uuid)
		case t.status == StatusFinished && q.attempt != 0 && q.attempt == t.attempt:
			errs[i] = errFinishedBefore
		case t.status == StatusFinished && q.attempt == 0:
			errs[i] = fmt.Errorf("%w: %s (attempt %d); name the attempt for a retried finish to succeed", ErrAlreadyFinished, q.uuid, t.attempt)
		case q.attempt != 0 && (q.attempt != t.attempt || t.status != StatusRunning):
			errs[i] = fmt.Errorf("%w: task %s attempt %d; the task is %s at attempt %d", ErrStaleLease, q.uuid, q.attempt, t.status, t.attempt)
		case t.status != StatusRunning:
			errs[i] = fmt.Errorf("%w: task %s is %s", ErrNotRunning, q.uuid, t.status)
		default:
			t.status = StatusFinished
			done = append(done, i)
		}
	}
	return errs, done
}

// finishBatch finishes running tasks in one transaction and frees their
// slots; errs[i] is the outcome of reqs[i] (see finishOutcomes). A non-nil
// error means the transaction failed and nothing changed.
func (s *store) finishBatch(ctx context.Context, reqs []finishReq, now time.Time) ([]error, error) {
	if s.d == postgresDialect {
		return s.finishPG(ctx, reqs, now)
	}
	var errs []error
	err := s.tx(ctx, func(tx *sql.Tx) error {
		ids := make([]any, 0, len(reqs))
		seen := map[string]bool{}
		for _, r := range reqs {
			if !seen[r.uuid] {
				seen[r.uuid] = true
				ids = append(ids, r.uuid)
			}
		}
		rows, err := tx.QueryContext(ctx, s.q(`SELECT uuid, worker, status, attempts FROM dispatch_tasks WHERE uuid IN (`+placeholders(len(ids))+`) ORDER BY uuid`), ids...)
		if err != nil {
			return err
		}
		state := map[string]*finishState{}
		worker := map[string]string{}
		for rows.Next() {
			var id, w, st string
			r := &finishState{}
			if err := rows.Scan(&id, &w, &st, &r.attempt); err != nil {
				rows.Close()
				return err
			}
			r.status = Status(st)
			state[id], worker[id] = r, w
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		var done []int
		errs, done = finishOutcomes(reqs, state)
		if len(done) == 0 {
			return nil
		}
		tasks := make([]Task, len(done))
		doneIDs := make([]any, len(done))
		for k, i := range done {
			tasks[k] = Task{UUID: reqs[i].uuid, Worker: worker[reqs[i].uuid]}
			doneIDs[k] = reqs[i].uuid
		}
		if err := s.freeSlots(ctx, tx, tasks); err != nil {
			return err
		}
		args := append([]any{now.UnixMicro()}, doneIDs...)
		res, err := tx.ExecContext(ctx, s.q(`UPDATE dispatch_tasks SET status = 'finished', ended_at = ?, lease_owner = '', deadline = 0 WHERE status = 'running' AND uuid IN (`+placeholders(len(doneIDs))+`)`), args...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || int(n) != len(done) {
			return fmt.Errorf("dispatch: finish: %d of %d rows changed in the transaction (%v)", n, len(done), err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return errs, nil
}

// releaseMode says what happens to a running task whose attempt ends
// without a Finish.
type releaseMode int

const (
	releaseRetry    releaseMode = iota // counts as a failed attempt: retry after backoff or fail for good
	releaseGiveBack                    // the node stopped: waits again now, the attempt not counted
)

// released is what became of one task freed by release.
type released struct {
	Task
	Failed bool   // retries spent: the task failed for good
	HeldBy string // the lease that held the attempt (Task.Node is "" now)
}

// release frees running tasks: slots back, then retry, fail or give back.
func (s *store) release(ctx context.Context, tx *sql.Tx, tasks []Task, mode releaseMode, reason string, now time.Time, backoff func(attempt int) time.Duration) ([]released, error) {
	if err := s.freeSlots(ctx, tx, tasks); err != nil {
		return nil, err
	}
	out := make([]released, 0, len(tasks))
	upd := s.q(`UPDATE dispatch_tasks SET status = ?, attempts = ?, run_at = ?, lease_owner = '', deadline = 0, ended_at = ?, last_error = ? WHERE uuid = ? AND status = 'running'`)
	for _, t := range tasks {
		r := released{Task: t, HeldBy: t.Node}
		r.LastError, r.Node = reason, ""
		var ended int64
		switch {
		case mode == releaseGiveBack:
			r.Status, r.Attempt, r.RunAt = StatusWaiting, t.Attempt-1, now
		case t.Attempt > t.MaxRetries:
			r.Status, r.Failed, r.EndedAt = StatusFailed, true, now
			ended = now.UnixMicro()
		default:
			r.Status, r.RunAt = StatusWaiting, now.Add(backoff(t.Attempt))
		}
		if err := bump(ctx, tx, upd, string(r.Status), r.Attempt, micros(r.RunAt), ended, reason, t.UUID); err != nil {
			return nil, fmt.Errorf("dispatch: release %s: %w", t.UUID, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// failAttempt ends one attempt that reported an error.
func (s *store) failAttempt(ctx context.Context, uuid string, attempt int, reason string, now time.Time, backoff func(int) time.Duration) (released, error) {
	var r []released
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := lockGlobal(ctx, tx, s); err != nil {
			return err
		}
		t, err := s.lockTask(ctx, tx, uuid)
		if err != nil {
			return err
		}
		if t.Status != StatusRunning || t.Attempt != attempt {
			return fmt.Errorf("%w: task %s attempt %d; the task is %s at attempt %d", ErrStaleLease, uuid, attempt, t.Status, t.Attempt)
		}
		r, err = s.release(ctx, tx, []Task{t}, releaseRetry, reason, now, backoff)
		return err
	})
	if err != nil {
		return released{}, err
	}
	return r[0], nil
}

// The conditions of runningWhere: the overdue attempts (expire), those
// whose lease is gone (reap), those of one lease (dropNode).
const (
	overdueCond  = `deadline <= ?`
	orphanedCond = `lease_owner NOT IN (SELECT id FROM dispatch_nodes)`
	leaseCond    = `lease_owner = ?`
)

// runningQuery selects (and on PostgreSQL locks) the running tasks that
// match cond, at most the last argument of them.
func (s *store) runningQuery(cond string) string {
	return s.q(`SELECT ` + taskCols + ` FROM dispatch_tasks WHERE status = 'running' AND ` + cond + ` LIMIT ?` + s.forUpdate())
}

// runningWhere locks the running tasks that match cond.
func (s *store) runningWhere(ctx context.Context, tx *sql.Tx, cond string, limit int, args ...any) ([]Task, error) {
	args = append(args, limit)
	return queryTasks(ctx, tx, s.runningQuery(cond), args...)
}

// overdueQuery tells whether some running task is past its deadline (the
// argument).
const overdueQuery = `SELECT EXISTS (SELECT 1 FROM dispatch_tasks WHERE status = 'running' AND deadline <= ?)`

// expire times out running tasks whose deadline has passed.
// A look without the global lock comes first: most sweeps find nothing
// overdue, and they then take no lock from the claims and finishes.
func (s *store) expire(ctx context.Context, now time.Time, limit int, backoff func(int) time.Duration) ([]released, error) {
	var due bool
	if err := s.db.QueryRowContext(ctx, s.q(overdueQuery), now.UnixMicro()).Scan(&due); err != nil || !due {
		return nil, err
	}
	var out []released
	err := s.tx(ctx, func(tx *sql.Tx) error {
		out = nil
		if err := lockGlobal(ctx, tx, s); err != nil {
			return err
		}
		ts, err := s.runningWhere(ctx, tx, overdueCond, limit, now.UnixMicro())
		if err != nil || len(ts) == 0 {
			return err
		}
		out, err = s.release(ctx, tx, ts, releaseRetry, "timed out", now, backoff)
		return err
	})
	return out, err
}

// lockGlobal takes the global row's lock first (PostgreSQL; SQLite
// serializes write transactions): every writer of a counter or a cap —
// claims, sweeps, Cancel, a failed attempt, PutWorker — takes it before
// any task's or worker's lock. A finish on PostgreSQL takes no lock but
// its tasks' (see pgFinish).
func lockGlobal(ctx context.Context, tx *sql.Tx, s *store) error {
	if s.d != postgresDialect {
		return nil
	}
	var id int
	return tx.QueryRowContext(ctx, `SELECT id FROM dispatch_global WHERE id = 1 FOR UPDATE`).Scan(&id)
}

// holdingQuery reads which of n tasks (the arguments after the lease) run
// under a lease (the first argument), and their attempts.
func holdingQuery(n int) string {
	return `SELECT uuid, attempts FROM dispatch_tasks WHERE status = 'running' AND lease_owner = ? AND uuid IN (` + placeholders(n) + `)`
}

// holding returns, of the given tasks, those running under lease node,
// with their attempt.
func (s *store) holding(ctx context.Context, uuids []string, node string) (map[string]int, error) {
	args := make([]any, 0, len(uuids)+1)
	args = append(args, node)
	for _, u := range uuids {
		args = append(args, u)
	}
	rows, err := s.db.QueryContext(ctx, s.q(holdingQuery(len(uuids))), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id string
		var a int
		if err := rows.Scan(&id, &a); err != nil {
			return nil, err
		}
		out[id] = a
	}
	return out, rows.Err()
}

// putNode writes (or renews) a node's lease; renew reports false if the
// lease row is gone (reaped).
func (s *store) registerNode(ctx context.Context, id string, expires time.Time) error {
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO dispatch_nodes (id, expires) VALUES (?, ?)`), id, expires.UnixMicro())
	if err != nil {
		return fmt.Errorf("dispatch: register node %s: %w", id, err)
	}
	return nil
}

func (s *store) renewNode(ctx context.Context, id string, expires time.Time) (bool, error) {
	// A lease only ever grows: a renewal computed from an earlier reading
	// of the clock never shortens one already renewed.
	greatest := "max"
	if s.d == postgresDialect {
		greatest = "GREATEST"
	}
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE dispatch_nodes SET expires = `+greatest+`(expires, ?) WHERE id = ?`), expires.UnixMicro(), id)
	if err != nil {
		return false, fmt.Errorf("dispatch: renew lease of node %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("dispatch: renew lease of node %s: %w", id, err)
	}
	return n == 1, nil
}

// reapDueQuery tells whether a lease lapsed before the argument or a
// running task's lease is gone.
const reapDueQuery = `SELECT EXISTS (SELECT 1 FROM dispatch_nodes WHERE expires < ?)
    OR EXISTS (SELECT 1 FROM dispatch_tasks t WHERE t.status = 'running'
        AND NOT EXISTS (SELECT 1 FROM dispatch_nodes n WHERE n.id = t.lease_owner))`

// reap deletes the leases that lapsed before now and frees their tasks
// under the retry policy. A lapsed lease means its node stopped renewing
// for a whole TTL; a live node that could not renew cancels its handlers
// before then.
//
// A look without the global lock comes first: most sweeps find no lapsed
// lease and no task whose holder has no lease row, and they then take no
// lock from the claims and finishes.
func (s *store) reap(ctx context.Context, now time.Time, limit int, backoff func(int) time.Duration) ([]string, []released, error) {
	var due bool
	err := s.db.QueryRowContext(ctx, s.q(reapDueQuery), now.UnixMicro()).Scan(&due)
	if err != nil || !due {
		return nil, nil, err
	}
	return s.reapWhere(ctx, `expires < ?`, []any{now.UnixMicro()}, now, limit, backoff)
}

// reapLeases deletes the named leases (their ZooKeeper sessions ended) and
// frees their tasks under the retry policy.
func (s *store) reapLeases(ctx context.Context, ids []string, now time.Time, backoff func(int) time.Duration) ([]string, []released, error) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return s.reapWhere(ctx, `id IN (`+placeholders(len(ids))+`)`, args, now, 10000, backoff)
}

func (s *store) reapWhere(ctx context.Context, cond string, args []any, now time.Time, limit int, backoff func(int) time.Duration) ([]string, []released, error) {
	var dead []string
	var out []released
	err := s.tx(ctx, func(tx *sql.Tx) error {
		dead, out = nil, nil
		if err := lockGlobal(ctx, tx, s); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, s.q(`DELETE FROM dispatch_nodes WHERE `+cond+` RETURNING id`), args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			dead = append(dead, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		// Every running task whose holder has no lease row: the ones just
		// deleted, and any left from a round that hit its limit.
		ts, err := s.runningWhere(ctx, tx, orphanedCond, limit)
		if err != nil || len(ts) == 0 {
			return err
		}
		out, err = s.release(ctx, tx, ts, releaseRetry, "node lost: its lease lapsed", now, backoff)
		return err
	})
	return dead, out, err
}

// dropNode ends a node's lease on a clean stop, giving its unfinished tasks
// back to the queue without counting the attempt.
func (s *store) dropNode(ctx context.Context, id string, now time.Time) ([]released, error) {
	var out []released
	err := s.tx(ctx, func(tx *sql.Tx) error {
		out = nil
		if err := lockGlobal(ctx, tx, s); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM dispatch_nodes WHERE id = ?`), id); err != nil {
			return err
		}
		ts, err := s.runningWhere(ctx, tx, leaseCond, 1<<30, id)
		if err != nil || len(ts) == 0 {
			return err
		}
		out, err = s.release(ctx, tx, ts, releaseGiveBack, "node stopped", now, nil)
		return err
	})
	return out, err
}

// cancel ends a waiting or running task; a running one's slots are freed.
func (s *store) cancel(ctx context.Context, uuid string, now time.Time) (Task, error) {
	var t Task
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := lockGlobal(ctx, tx, s); err != nil {
			return err
		}
		var err error
		if t, err = s.lockTask(ctx, tx, uuid); err != nil {
			return err
		}
		switch t.Status {
		case StatusWaiting:
		case StatusRunning:
			if err := s.freeSlots(ctx, tx, []Task{t}); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: task %s is %s", ErrFinal, uuid, t.Status)
		}
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE dispatch_tasks SET status = 'cancelled', ended_at = ?, lease_owner = '', deadline = 0 WHERE uuid = ?`), now.UnixMicro(), uuid); err != nil {
			return err
		}
		t.Status, t.EndedAt = StatusCancelled, now
		return nil
	})
	return t, err
}

func (s *store) task(ctx context.Context, uuid string) (Task, error) {
	t, err := scanTask(s.db.QueryRowContext(ctx, s.q(`SELECT `+taskCols+` FROM dispatch_tasks WHERE uuid = ?`), uuid))
	if errors.Is(err, sql.ErrNoRows) {
		return Task{}, fmt.Errorf("%w: %q", ErrUnknownTask, uuid)
	}
	if err != nil {
		return Task{}, fmt.Errorf("dispatch: read task %s: %w", uuid, err)
	}
	return t, nil
}

func (s *store) tasks(ctx context.Context, f Filter) ([]Task, error) {
	var conds []string
	var args []any
	if f.Worker != "" {
		conds = append(conds, "worker = ?")
		args = append(args, f.Worker)
	}
	if f.Status != "" {
		conds = append(conds, "status = ?")
		args = append(args, string(f.Status))
	}
	if f.ExternalID != "" {
		conds = append(conds, "external_id = ?")
		args = append(args, f.ExternalID)
	}
	if f.After != "" {
		conds = append(conds, "uuid > ?")
		args = append(args, f.After)
	}
	query := `SELECT ` + taskCols + ` FROM dispatch_tasks`
	if len(conds) > 0 {
		query += " WHERE " + strings.Join(conds, " AND ")
	}
	query += " ORDER BY uuid LIMIT ?"
	args = append(args, f.Limit)
	rows, err := s.db.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, fmt.Errorf("dispatch: list tasks: %w", err)
	}
	defer rows.Close()
	var out []Task
	infos := 0
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, fmt.Errorf("dispatch: list tasks: %w", err)
		}
		out = append(out, t)
		if infos += len(t.Info); f.MaxBytes > 0 && infos >= f.MaxBytes {
			break // the rest stays unread: closing the rows drops it
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("dispatch: list tasks: %w", err)
	}
	return out, nil
}
