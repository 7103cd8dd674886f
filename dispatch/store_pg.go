package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// The hot paths on PostgreSQL — a claim and a batch of finishes — are one
// round trip each: two statements sent together in one pipeline (pgx's
// batch, one Sync), which PostgreSQL runs as one implicit transaction and
// commits at the Sync. The first statement takes the global row's lock;
// the second does all the work in one data-modifying CTE.
//
// Why two statements and not one: under READ COMMITTED a statement reads
// from a snapshot taken when it starts. A single statement that waited
// for the global row's lock would get the newest global row (a locked row
// is re-read) but would still see every task and worker as they were
// before it waited — the tasks another node just started would look
// waiting, its counters unraised. The second statement starts after the
// lock is held, so its snapshot holds everything every earlier writer
// committed, and nothing it reads can change before it commits: every
// writer of a counter or a cap takes the global row's lock first, and
// waiting tasks change state only under it (assignments add rows, which a
// claim either sees or not, as if they came after it).
//
// The lock is held for the server's own work on the two statements and
// the commit: no client round trip, no Go scheduling, happens under it.

// pgClaimLock locks the global row and reads this node's lease.
const pgClaimLock = `SELECT COALESCE(n.expires, 0) FROM dispatch_global g
LEFT JOIN dispatch_nodes n ON n.id = $1 WHERE g.id = 1 FOR UPDATE OF g`

// pgClaim starts, under the global row's lock, the first startable tasks
// in EDF order within the free global slots ($3 at most) and each
// worker's free slots, and raises the counters by what it started. A
// candidate that is late under LateFail fails instead (it used a slot of
// the round, not a running slot). Nothing happens if the lease $1 is gone
// or expired at $2.
//
// The candidates: for each worker with free slots, its first free-slots
// startable tasks through the index (worker, acceptable_start,
// expected_start, uuid) WHERE status = 'waiting' (a LATERAL subquery with
// a per-worker LIMIT reads no more than a worker could take; a window
// function ranking every startable task per worker would read them all),
// merged in EDF order and limited to the free global slots: exactly what a
// greedy pass over every startable task in EDF order would take.
//
// The counters are raised by the rows the UPDATE changed, so they always
// agree with the tasks marked running. The guards cannot fail while every
// writer takes the global lock first; if one ever did, the cast of its
// message to an integer is an error that aborts the transaction, and no
// cap is passed.
const pgClaim = `WITH g AS (
    SELECT GREATEST(LEAST(g.max_running - g.running, $3), 0) AS free
    FROM dispatch_global g
    WHERE g.id = 1 AND EXISTS (SELECT 1 FROM dispatch_nodes n WHERE n.id = $1 AND n.expires > $2)
), cand AS MATERIALIZED (
    SELECT x.uuid, w.name AS worker, (w.late_policy = 'fail' AND x.acceptable_start < $2) AS fail
    FROM dispatch_workers w CROSS JOIN LATERAL (
        SELECT t.uuid, t.acceptable_start, t.expected_start FROM dispatch_tasks t
        WHERE t.worker = w.name AND t.status = 'waiting' AND t.run_at <= $2
        ORDER BY t.acceptable_start, t.expected_start, t.uuid
        LIMIT LEAST(w.max_running - w.running, $3)) x
    WHERE w.running < w.max_running
    ORDER BY x.acceptable_start, x.expected_start, x.uuid
    LIMIT COALESCE((SELECT free FROM g), 0)
), upd AS (
    UPDATE dispatch_tasks t SET
        status = CASE WHEN c.fail THEN 'failed' ELSE 'running' END,
        attempts = CASE WHEN c.fail THEN t.attempts ELSE t.attempts + 1 END,
        lease_owner = CASE WHEN c.fail THEN t.lease_owner ELSE $1 END,
        started_at = CASE WHEN c.fail THEN t.started_at ELSE $2 END,
        deadline = CASE WHEN c.fail THEN t.deadline ELSE $2 + t.timeout_us END,
        late = CASE WHEN c.fail OR t.acceptable_start < $2 THEN 1 ELSE 0 END,
        ended_at = CASE WHEN c.fail THEN $2 ELSE 0 END,
        last_error = CASE WHEN c.fail THEN 'late: not started by its acceptable start, and the worker''s late policy is fail' ELSE t.last_error END
    FROM cand c
    WHERE t.uuid = c.uuid AND t.status = 'waiting'
    RETURNING c.fail, ` + taskColsT + `
), per AS (
    SELECT worker, count(*)::int AS n FROM upd WHERE NOT fail GROUP BY worker
), wu AS (
    UPDATE dispatch_workers w
    SET running = w.running + per.n + CAST(CASE WHEN w.running + per.n <= w.max_running THEN '0'
        ELSE 'dispatch: a claim would pass the cap of worker ' || w.name END AS integer)
    FROM per WHERE w.name = per.worker
    RETURNING w.name
), gu AS (
    UPDATE dispatch_global g
    SET running = g.running + s.n + CAST(CASE WHEN g.running + s.n <= g.max_running THEN '0'
        ELSE 'dispatch: a claim would pass the global cap of ' || g.max_running END AS integer)
    FROM (SELECT sum(n)::int AS n FROM per) s
    WHERE g.id = 1 AND s.n > 0
    RETURNING g.running
)
SELECT * FROM upd`

// taskColsT is taskCols qualified with the alias t.
const taskColsT = `t.uuid, t.worker, t.external_id, t.info, t.expected_start, t.acceptable_start, t.run_at, t.status, t.attempts, t.max_retries, t.timeout_us, t.lease_owner, t.deadline, t.late, t.created_at, t.started_at, t.ended_at, t.last_error`

// pgLockGlobal takes the global row's lock, the first lock of every writer.
const pgLockGlobal = `SELECT id FROM dispatch_global WHERE id = 1 FOR UPDATE`

// pgFinish finishes, under the global row's lock, the running tasks among
// $1 whose requests name their running attempt (or attempt 0), and lowers
// the counters by what it finished in the same statement, with one UPDATE
// per table from the aggregated counts (CHECK (running >= 0) is the guard).
// It returns each requested task's state before the statement and whether
// the statement finished it, from which the caller tells each request its
// outcome.
const pgFinish = `WITH req AS (
    SELECT r.uuid, bool_or(r.attempt = 0) AS any_attempt, array_agg(r.attempt) AS attempts
    FROM unnest($1::text[], $2::int[]) AS r(uuid, attempt)
    GROUP BY r.uuid
), cur AS MATERIALIZED (
    SELECT t.uuid, t.status, t.attempts FROM dispatch_tasks t JOIN req ON req.uuid = t.uuid
), done AS (
    UPDATE dispatch_tasks t SET status = 'finished', ended_at = $3, lease_owner = '', deadline = 0
    FROM req
    WHERE t.uuid = req.uuid AND t.status = 'running' AND (req.any_attempt OR t.attempts = ANY (req.attempts))
    RETURNING t.uuid, t.worker
), per AS (
    SELECT worker, count(*)::int AS n FROM done GROUP BY worker
), wu AS (
    UPDATE dispatch_workers w SET running = w.running - per.n FROM per WHERE w.name = per.worker
    RETURNING w.name
), gu AS (
    UPDATE dispatch_global g SET running = g.running - s.n
    FROM (SELECT count(*)::int AS n FROM done) s
    WHERE g.id = 1 AND s.n > 0
    RETURNING g.running
)
SELECT cur.uuid, cur.status, cur.attempts, done.uuid IS NOT NULL FROM cur LEFT JOIN done ON done.uuid = cur.uuid`

// pipeline runs fn on one connection of the pool as pgx sees it, for
// batches sent in one round trip.
func (s *store) pipeline(ctx context.Context, fn func(*pgx.Conn) error) (err error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("dispatch: connection: %w", err)
	}
	defer func() {
		if cerr := conn.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("dispatch: release connection: %w", cerr))
		}
	}()
	return conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("dispatch: the postgres driver's connection is a %T, not pgx's", dc)
		}
		return fn(c.Conn())
	})
}

// claimPG is claim on PostgreSQL: one round trip (see pgClaim).
func (s *store) claimPG(ctx context.Context, node string, now time.Time, limit int) (claimed, error) {
	var c claimed
	nowUS := now.UnixMicro()
	var expires int64
	err := s.pipeline(ctx, func(conn *pgx.Conn) error {
		b := &pgx.Batch{}
		b.Queue(pgClaimLock, node)
		b.Queue(pgClaim, node, nowUS, limit)
		br := conn.SendBatch(ctx, b)
		err := func() error {
			if err := br.QueryRow().Scan(&expires); err != nil {
				return err
			}
			rows, err := br.Query()
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var fail bool
				t, err := scanTask(prefixScanner{rows, []any{&fail}})
				if err != nil {
					return err
				}
				if fail {
					c.lateFailed = append(c.lateFailed, t)
				} else {
					c.started = append(c.started, t)
				}
			}
			return rows.Err()
		}()
		return errors.Join(err, br.Close())
	})
	if err != nil {
		return claimed{}, err
	}
	if expires <= nowUS {
		return claimed{}, fmt.Errorf("%w: lease %s is gone or expired; not claiming", ErrStaleLease, node)
	}
	c.considered = len(c.started) + len(c.lateFailed)
	return c, nil
}

// finishPG is finishBatch on PostgreSQL: one round trip (see pgFinish).
func (s *store) finishPG(ctx context.Context, reqs []finishReq, now time.Time) ([]error, error) {
	ids := make([]string, len(reqs))
	attempts := make([]int32, len(reqs))
	for i, r := range reqs {
		ids[i], attempts[i] = r.uuid, int32(r.attempt)
	}
	state := map[string]*finishState{}
	err := s.pipeline(ctx, func(conn *pgx.Conn) error {
		clear(state)
		b := &pgx.Batch{}
		b.Queue(pgLockGlobal)
		b.Queue(pgFinish, ids, attempts, now.UnixMicro())
		br := conn.SendBatch(ctx, b)
		err := func() error {
			var id int
			if err := br.QueryRow().Scan(&id); err != nil {
				return err
			}
			rows, err := br.Query()
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var id, st string
				r := &finishState{}
				if err := rows.Scan(&id, &st, &r.attempt, &r.recorded); err != nil {
					return err
				}
				r.status = Status(st)
				state[id] = r
			}
			return rows.Err()
		}()
		return errors.Join(err, br.Close())
	})
	if err != nil {
		return nil, err
	}
	errs, done := finishOutcomes(reqs, state)
	// The statement finished exactly the tasks the rules above finish;
	// anything else would be a bug, reported rather than hidden.
	finished := map[string]bool{}
	for _, i := range done {
		finished[reqs[i].uuid] = true
		if !state[reqs[i].uuid].recorded {
			errs[i] = fmt.Errorf("dispatch: finish %s: the store did not record it although it ran", reqs[i].uuid)
		}
	}
	for id, st := range state {
		if st.recorded && !finished[id] {
			return nil, fmt.Errorf("dispatch: finish: the store finished %s, which no request in the batch may finish", id)
		}
	}
	return errs, nil
}

// prefixScanner scans the leading columns of a row into pre and the rest
// into what Scan is given.
type prefixScanner struct {
	r   scanner
	pre []any
}

func (p prefixScanner) Scan(dest ...any) error {
	return p.r.Scan(append(append([]any{}, p.pre...), dest...)...)
}
