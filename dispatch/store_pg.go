package dispatch

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/shardjob/shardjob/internal/sqldb"
)

// The hot paths on PostgreSQL are one round trip each.
//
// A claim is two statements sent together in one pipeline (a batch with
// one Sync: sqldb.Driver.Batch, which store/postgres does with pgx), which
// PostgreSQL runs as one implicit transaction and commits at the Sync: the
// first takes the global row's lock, the second does all the work in one
// data-modifying CTE. Two statements, not one, because under READ
// COMMITTED a statement reads from a snapshot taken when it
// starts: a single statement that waited for the global row's lock would
// get the newest global row (a locked row is re-read) but would still see
// the tasks and workers as they were before it waited — the tasks another
// node just started would look waiting, its counters unraised. The second
// statement starts after the lock is held, so its snapshot holds what
// every earlier holder committed. The lock is held for the server's own
// work on the two statements and the commit: no client round trip, no Go
// scheduling, happens under it.
//
// A batch of finishes is one statement that takes no lock but its tasks'
// (pgFinish): it marks them finished and records the slots they free in
// dispatch_freed, which the next claim folds into the counters under the
// global row's lock. So finishes run side by side with claims and with
// each other, and only claims (and the rare sweeps, cancels, failed
// attempts and cap changes) are serialized.
//
// Why the counters stay exact for a claim: its snapshot is taken with the
// global row's lock held, every writer of a counter or a cap holds that
// lock, and the freed slots it folds are those of every finish committed
// before its snapshot. A finish committed later is not seen, as if it came
// after the claim: the claim sees fewer free slots, never more.
//
// Why nothing deadlocks: holders of the global row's lock take tasks' and
// workers' locks after it, and may wait for a task's lock held by a
// finish; a finish never waits for anything — it locks its tasks with
// SKIP LOCKED, and gives back the ones another transaction holds, to be
// tried again (finishPG) — and writes no row anyone else locks (it only
// inserts into dispatch_freed, which only claims delete from).

// pgClaimLock locks the global row and reads this node's lease.
const pgClaimLock = `SELECT COALESCE(n.expires, 0) FROM dispatch_global g
LEFT JOIN dispatch_nodes n ON n.id = $1 WHERE g.id = 1 FOR UPDATE OF g`

// pgClaim, under the global row's lock, folds the slots freed since the
// last claim into the counters (fr, frw), then starts the first startable
// tasks in EDF order within the free global slots ($3 at most) and each
// worker's free slots, and raises the counters by what it started. A
// candidate that is late under LateFail fails instead (it used a slot of
// the round, not a running slot). Nothing starts if the lease $1 is gone
// or expired at $2.
//
// The candidates: for each worker with free slots, its first free-slots
// startable tasks through the index dispatch_tasks_live (worker, status,
// acceptable_start, expected_start, uuid), in its order (a LATERAL
// subquery with a per-worker LIMIT reads no more than a worker could take;
// a window function ranking every startable task per worker would read
// them all), merged in EDF order and limited to the free global slots:
// exactly what a greedy pass over every startable task in EDF order would
// take. The live index holds the due and the not yet due waiting tasks
// mixed, so the walk of a worker's head stops after k due tasks, k being
// its due tasks counted from dispatch_tasks_due (worker, run_at) up to its
// free slots (migration 007): it never runs on through the tasks due in
// an hour or tomorrow looking for due ones that are not there, which read
// every waiting task of a worker with fewer due tasks than free slots on
// every claim (590 ms a claim beside 1,000,000; the claim reads the same
// rows at any backlog now, TestClaimPlanReadsNoFutureBacklog). What it
// may still read and skip are not-due tasks whose acceptable start comes
// before one of the k it takes: a task's window that opens later but
// closes earlier. The walk's order is the index's, so no plan sorts a
// worker's tasks by run_at to find its first few, as one did on a backlog
// without statistics (migration 004); sorts are off for the claim
// (pgClaimPlanning), so the count cannot read the due tasks in another
// order either.
//
// The UPDATE reaches each candidate's row by its tuple id (t.ctid =
// c.tid, a Tid Scan per candidate), which the candidates' scan read with
// it: no second walk of an index per task. The row is the version the
// statement's snapshot saw, and no other transaction makes a new version
// of a waiting task while the claim holds the global row's lock: every
// writer of a waiting task (a claim, Cancel, a timeout, a reap, a
// give-back, a failed attempt) holds that lock, and a finish's lock pass,
// which may lock a waiting task a finish names, writes no new version. If
// one ever did, the UPDATE would skip that candidate (the newer version
// has another tuple id) and the counters, raised by the rows it changed,
// would still agree with the tasks. The claim turns hash and merge joins
// off (pgClaimPlanning), since once the tasks are analyzed the planner
// would hash every task of the table to join the candidates. Reaching
// them by the primary key instead (t.uuid = c.uuid) walked the key's
// index per candidate, a tenth of the claim's buffer reads; keying the
// UPDATE by the candidates' uuids (t.uuid = ANY (ARRAY(SELECT uuid FROM
// cand))) was probed once per candidate too, and cost a claim of a
// thousand two thirds of its throughput.
//
// The counters change by the rows the UPDATE changed less the freed
// slots, so they always agree with the tasks marked running. The guards
// cannot fail while every writer of a counter holds the global row's lock;
// if one ever did, the cast of its message to an integer is an error that
// aborts the transaction, and no cap is passed.
const pgClaim = `WITH fr AS (
    DELETE FROM dispatch_freed RETURNING worker, n
), frw AS (
    SELECT worker, sum(n)::int AS n FROM fr GROUP BY worker
), ws AS MATERIALIZED (
    SELECT w.name, w.late_policy, w.max_running, w.running - COALESCE(f.n, 0) AS running
    FROM dispatch_workers w LEFT JOIN frw f ON f.worker = w.name
), g AS (
    SELECT GREATEST(LEAST(g.max_running - g.running + COALESCE((SELECT sum(n) FROM frw), 0), $3), 0) AS free
    FROM dispatch_global g
    WHERE g.id = 1 AND EXISTS (SELECT 1 FROM dispatch_nodes n WHERE n.id = $1 AND n.expires > $2)
), cand AS MATERIALIZED (
    SELECT x.tid, x.uuid, w.name AS worker, (w.late_policy = 'fail' AND x.acceptable_start < $2) AS fail
    FROM ws w CROSS JOIN LATERAL (
        SELECT count(*) AS n FROM (
            SELECT FROM dispatch_tasks d
            WHERE d.worker = w.name AND d.status = 'waiting' AND d.run_at <= $2
            ORDER BY d.worker, d.run_at LIMIT LEAST(w.max_running - w.running, $3)) due) k
    CROSS JOIN LATERAL (
        SELECT t.ctid AS tid, t.uuid, t.acceptable_start, t.expected_start FROM dispatch_tasks t
        WHERE t.worker = w.name AND t.status = 'waiting' AND t.run_at <= $2
        ORDER BY t.acceptable_start, t.expected_start, t.uuid
        LIMIT k.n) x
    WHERE w.running < w.max_running AND k.n > 0
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
    WHERE t.ctid = c.tid AND t.status = 'waiting'
    RETURNING c.fail, ` + taskColsT + `
), per AS (
    SELECT worker, count(*)::int AS n FROM upd WHERE NOT fail GROUP BY worker
), delta AS (
    SELECT COALESCE(p.worker, f.worker) AS worker, COALESCE(p.n, 0) AS taken, COALESCE(p.n, 0) - COALESCE(f.n, 0) AS d
    FROM per p FULL JOIN frw f ON f.worker = p.worker
), wu AS (
    UPDATE dispatch_workers w
    SET running = w.running + delta.d + CAST(CASE WHEN delta.taken = 0 OR w.running + delta.d <= w.max_running THEN '0'
        ELSE 'dispatch: a claim would pass the cap of worker ' || w.name END AS integer)
    FROM delta WHERE w.name = delta.worker AND delta.d <> 0
    RETURNING w.name
), gu AS (
    UPDATE dispatch_global g
    SET running = g.running + s.d + CAST(CASE WHEN s.taken = 0 OR g.running + s.d <= g.max_running THEN '0'
        ELSE 'dispatch: a claim would pass the global cap of ' || g.max_running END AS integer)
    FROM (SELECT sum(taken)::int AS taken, sum(d)::int AS d FROM delta) s
    WHERE g.id = 1 AND s.d <> 0
    RETURNING g.running
)
SELECT * FROM upd`

// pgClaimPlanning and pgResetPlanning bracket a claim (set_config with
// is_local false is SET).
//
// Bitmap scans off: its candidates must come from an ordered scan of the
// live index, which stops after a worker's free slots. Without statistics
// on dispatch_tasks — a new or freshly loaded table, until autovacuum
// first analyzes it — the planner takes a worker's waiting tasks for a
// handful and reads them all through a bitmap scan and sorts them instead:
// milliseconds per worker per claim once there are tens of thousands, all
// under the global row's lock.
//
// Hash and merge joins off: the UPDATE must reach the chosen tasks by
// their key, one probe per candidate. Once autovacuum has analyzed the
// tasks, the planner takes the candidates for a tenth of the waiting tasks
// and hashes every task of the table to join them (a sequential scan of
// the whole table, live and ended, on every claim, under the global row's
// lock): a claim of 1,000 from a backlog of 100,000 took 124 ms so against
// 24 ms by key, and the run that met that analyze ran at a quarter of its
// throughput (docs/dispatch.md, "Beside River"). The claim's other
// joins are of a few rows (workers, freed slots) and are as cheap as a
// nested loop; the full join that merges taken and freed slots per
// worker still hashes, which the planner does when nothing else can.
//
// Sorts off: the only sort a claim needs is the merge of the workers'
// heads, which every plan has. Another sort is a worker's waiting tasks
// read in another order than the walk needs and sorted for the first few
// — all of them, a backlog of any size — which the planner chose once
// dispatch_tasks_due existed, through that index, for a worker's EDF walk
// on a table without statistics.
//
// JIT off: a join turned off is not forbidden but priced out (its cost
// raised by a constant so large that any plan's total passes
// jit_above_cost), and a claim would then compile its expressions with
// LLVM, inlined and optimized, on every run: about 450 ms of a claim that
// runs in 25 ms. A claim is short enough that JIT never pays; before this
// setting, an analyzed backlog's hashed plan passed jit_above_cost too.
//
// SET is transactional, so a claim that fails leaves the settings as it
// found them.
const (
	pgClaimPlanning = `SELECT set_config('enable_bitmapscan', 'off', false), set_config('enable_hashjoin', 'off', false),
    set_config('enable_mergejoin', 'off', false), set_config('enable_sort', 'off', false), set_config('jit', 'off', false)`
)

// pgResetPlanning undoes pgClaimPlanning, a statement each (a read of
// pg_settings to do it in one cost a millisecond per claim).
var pgResetPlanning = []string{`RESET enable_bitmapscan`, `RESET enable_hashjoin`, `RESET enable_mergejoin`, `RESET enable_sort`, `RESET jit`}

// pgNextRunAt is nextRunAt on PostgreSQL: each worker's earliest waiting
// task after $1 by the index dispatch_tasks_due, in its order (a LIMIT 1
// per worker, never a worker's whole backlog), and the earliest of those.
const pgNextRunAt = `SELECT min(x.run_at) FROM dispatch_workers w CROSS JOIN LATERAL (
    SELECT t.run_at FROM dispatch_tasks t WHERE t.worker = w.name AND t.status = 'waiting' AND t.run_at > ?
    ORDER BY t.run_at LIMIT 1) x`

// taskColsT is taskCols qualified with the alias t.
const taskColsT = `t.uuid, t.worker, t.external_id, t.info, t.expected_start, t.acceptable_start, t.run_at, t.status, t.attempts, t.max_retries, t.timeout_us, t.lease_owner, t.deadline, t.late, t.created_at, t.started_at, t.ended_at, t.last_error, t.trace_context`

// pgFinish finishes the running tasks among $1 whose requests ($1, $2:
// a uuid and its attempt, 0 for any) name their running attempt, and
// records the slots they free in dispatch_freed, one row per worker. It
// locks the requested tasks with SKIP LOCKED and changes only those it
// locked, so it never waits. Its rows are, for each request whose task it
// locked, the task's state as it was before the statement (recorded
// false), then one row per task it finished (recorded true; status and
// attempt NULL); a requested task it does not return was held by another
// transaction or does not exist (finishOnce tells which).
//
// Every read of the tasks is by key, whatever the planner guesses of the
// batch's size: each request reaches its task by the primary key in a
// LATERAL subquery that locks it (a subquery with a row lock is never
// flattened into a join, so no plan can hash the table for it, as a
// custom plan of a join with the requests did), carrying its attempt into
// the locked row (held); each locked row that its request may finish
// reaches its task by the primary key again. An earlier form matched the
// locked tasks against the requests in a semi-join that the generic plan
// ran as a nested loop under a join filter, building a whole-row copy of
// every locked task for every request: 125,000 of them for a batch of
// 500, most of the statement's time. The statement's two parts are
// concatenated, not joined, for the same reason. TestFinishPlanJoinsByKey
// checks the plan.
//
// The UPDATE's condition on t's attempt repeats held's: the row it
// reaches is the one held locked (a version its snapshot sees, followed to
// the newest, which no other transaction can change while the lock is
// held), so its status is the running one held read. It does not repeat
// that status: t.status = 'running' would make dispatch_tasks_running (WHERE
// status = 'running') an index the UPDATE may read, and statistics taken
// while no task ran (a backlog analyzed before the nodes started) put that
// index at a row or two, so the planner read every running task and
// joined each with every request under a join filter: 6.5 s for a batch
// of 500 beside 3,000 running (TestFinishPlanJoinsByKeyAnalyzedIdle).
//
// A task requested twice (a retry queued beside its first try) is locked
// once and held twice, once per request; the UPDATE changes it once.
const pgFinish = `WITH held AS MATERIALIZED (
    SELECT t.uuid, t.status, t.attempts, r.attempt
    FROM unnest($1::text[], $2::int[]) AS r(uuid, attempt)
    CROSS JOIN LATERAL (
        SELECT t.uuid, t.status, t.attempts FROM dispatch_tasks t
        WHERE t.uuid = r.uuid
        FOR UPDATE SKIP LOCKED) t
), done AS (
    UPDATE dispatch_tasks t SET status = 'finished', ended_at = $3, lease_owner = '', deadline = 0
    FROM held h
    WHERE t.uuid = h.uuid AND h.status = 'running' AND (h.attempt = 0 OR h.attempts = h.attempt)
        AND t.attempts = h.attempts
    RETURNING t.uuid, t.worker
), freed AS (
    INSERT INTO dispatch_freed (worker, n) SELECT worker, count(*) FROM done GROUP BY worker
)
SELECT uuid, status, attempts, false FROM held
UNION ALL
SELECT uuid, NULL, NULL, true FROM done`

// pgFinishUnheld reads, without a lock, the state of requested tasks that
// pgFinish did not lock: those that exist are held by another transaction
// (busy), the others are unknown.
const pgFinishUnheld = `SELECT uuid, status, attempts FROM dispatch_tasks WHERE uuid = ANY ($1::text[])`

// claimPG is claim on PostgreSQL: one round trip (see pgClaim).
func (s *store) claimPG(ctx context.Context, node string, now time.Time, limit int) (claimed, error) {
	var c claimed
	nowUS := now.UnixMicro()
	var expires int64
	stmts := []sqldb.Stmt{{SQL: pgClaimPlanning}, {SQL: pgClaimLock, Args: []any{node}}, {SQL: pgClaim, Args: []any{node, nowUS, limit}}}
	for _, r := range pgResetPlanning {
		stmts = append(stmts, sqldb.Stmt{SQL: r})
	}
	err := s.drv.Batch(ctx, s.db, stmts, func(br sqldb.BatchResults) error {
		if err := br.Exec(); err != nil {
			return err
		}
		if err := br.QueryRow(&expires); err != nil {
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
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
		for range pgResetPlanning {
			if err := br.Exec(); err != nil {
				return err
			}
		}
		return nil
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

// errBusy marks a finish request whose task another transaction held.
var errBusy = errors.New("dispatch: task locked by another transaction")

// finishPG is finishBatch on PostgreSQL: one statement (pgFinish), and
// again for the requests whose task another transaction held (a claim, a
// sweep, a cancel, another finish of the same task), until none is left.
func (s *store) finishPG(ctx context.Context, reqs []finishReq, now time.Time) ([]error, error) {
	errs := make([]error, len(reqs))
	todo := make([]int, len(reqs))
	for i := range reqs {
		todo[i] = i
	}
	for {
		part := make([]finishReq, len(todo))
		for k, i := range todo {
			part[k] = reqs[i]
		}
		perr, err := s.finishOnce(ctx, part, now)
		if err != nil {
			return nil, err
		}
		var busy []int
		for k, i := range todo {
			if perr[k] == errBusy {
				busy = append(busy, i)
				continue
			}
			errs[i] = perr[k]
		}
		if len(busy) == 0 {
			return errs, nil
		}
		todo = busy
		wait := time.NewTimer(time.Millisecond) // the holder commits soon: none of them waits for a finish
		select {
		case <-ctx.Done():
			wait.Stop()
			return nil, fmt.Errorf("dispatch: finish: %d tasks stayed locked by other transactions: %w", len(busy), ctx.Err())
		case <-wait.C:
		}
	}
}

// finishOnce runs pgFinish once; errs[i] is errBusy for a request whose
// task another transaction held.
func (s *store) finishOnce(ctx context.Context, reqs []finishReq, now time.Time) ([]error, error) {
	ids := make([]string, len(reqs))
	attempts := make([]int32, len(reqs))
	for i, r := range reqs {
		ids[i], attempts[i] = r.uuid, int32(r.attempt)
	}
	state := map[string]*finishState{}
	recorded := map[string]bool{}
	rows, err := s.db.QueryContext(ctx, pgFinish, ids, attempts, now.UnixMicro())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var st sql.NullString
		var attempt sql.NullInt64
		var rec bool
		if err := rows.Scan(&id, &st, &attempt, &rec); err != nil {
			return nil, err
		}
		if rec {
			recorded[id] = true
			continue
		}
		state[id] = &finishState{status: Status(st.String), attempt: int(attempt.Int64)}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	for id := range recorded {
		st := state[id]
		if st == nil {
			return nil, fmt.Errorf("dispatch: finish: the store finished %s, which the batch did not lock", id)
		}
		st.recorded = true
	}
	// A task not locked is either held by another transaction (tried
	// again) or unknown; one read tells them apart, and only when some
	// task was not locked.
	busy := map[string]bool{}
	var unheld []string
	for _, id := range ids {
		if _, listed := busy[id]; state[id] == nil && !listed {
			busy[id] = false // listed once; true below if the task exists
			unheld = append(unheld, id)
		}
	}
	if len(unheld) > 0 {
		urows, err := s.db.QueryContext(ctx, pgFinishUnheld, unheld)
		if err != nil {
			return nil, err
		}
		defer urows.Close()
		for urows.Next() {
			var id, st string
			r := &finishState{}
			if err := urows.Scan(&id, &st, &r.attempt); err != nil {
				return nil, err
			}
			r.status = Status(st)
			state[id] = r
			busy[id] = true
		}
		if err := urows.Err(); err != nil {
			return nil, err
		}
	}
	errs, done := finishOutcomes(reqs, state)
	for i, q := range reqs {
		if busy[q.uuid] {
			errs[i] = errBusy
		}
	}
	// The statement finished exactly the tasks the rules above finish;
	// anything else would be a bug, reported rather than hidden.
	finished := map[string]bool{}
	for _, i := range done {
		if busy[reqs[i].uuid] {
			continue
		}
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
