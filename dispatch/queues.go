package dispatch

import (
	"context"
	"fmt"
)

// Queue is one worker's tasks counted by state, as [Dispatcher.Queues]
// reads them: what a console or a metrics collector shows per worker.
type Queue struct {
	// Worker is the worker's name.
	Worker string
	// MaxRunning is the worker's cap (0 pauses it).
	MaxRunning int
	// Running is the count the cap is held against: the worker's running
	// counter, as Worker.Running reports it.
	Running int
	// Tasks counts the worker's tasks by status; every status is present,
	// with 0 when the worker has none in it. Ended tasks (finished, failed,
	// cancelled) are counted while the retention keeps them
	// (Config.MaxAge, Config.MaxRows).
	Tasks map[Status]int
	// Due counts the waiting tasks whose run time has come (RunAt at or
	// before now on the dispatcher's clock): those queued for a free slot.
	// The rest of the waiting ones wait for their expected start or for a
	// retry's backoff.
	Due int
	// Late counts the tasks whose last start came after their acceptable
	// start (Task.Late), whatever their status now.
	Late int
}

// queuesQuery counts every worker's tasks by status, in two parts that each
// read a partial index rather than the task rows: the live tasks (waiting,
// running) from dispatch_tasks_live, whose size is the backlog, and the
// ended ones from dispatch_tasks_ended, whose size the retention bounds
// (Config.MaxRows). SQLite is told to read the ended tasks through their
// index (endedFrom): left to itself it walks the rows in worker order
// through the unique index instead. The running count is the stored one
// less the slots freed since the last claim, as workerCols reads it.
func queuesQuery(d dialect) string {
	endedFrom := `dispatch_tasks`
	if d == sqliteDialect {
		endedFrom = `dispatch_tasks INDEXED BY dispatch_tasks_ended`
	}
	return `SELECT w.name, w.max_running,
	w.running - COALESCE((SELECT sum(f.n) FROM dispatch_freed f WHERE f.worker = w.name), 0),
	COALESCE(l.waiting, 0), COALESCE(l.running, 0),
	COALESCE(e.finished, 0), COALESCE(e.failed, 0), COALESCE(e.cancelled, 0),
	COALESCE(l.due, 0), COALESCE(l.late, 0) + COALESCE(e.late, 0)
FROM dispatch_workers w
LEFT JOIN (
	SELECT worker,
		sum(CASE WHEN status = 'waiting' THEN 1 ELSE 0 END) AS waiting,
		sum(CASE WHEN status = 'running' THEN 1 ELSE 0 END) AS running,
		sum(CASE WHEN status = 'waiting' AND run_at <= ? THEN 1 ELSE 0 END) AS due,
		sum(CASE WHEN late <> 0 THEN 1 ELSE 0 END) AS late
	FROM dispatch_tasks WHERE status IN ('waiting', 'running')
	GROUP BY worker
) l ON l.worker = w.name
LEFT JOIN (
	SELECT worker,
		sum(CASE WHEN status = 'finished' THEN 1 ELSE 0 END) AS finished,
		sum(CASE WHEN status = 'failed' THEN 1 ELSE 0 END) AS failed,
		sum(CASE WHEN status = 'cancelled' THEN 1 ELSE 0 END) AS cancelled,
		sum(CASE WHEN late <> 0 THEN 1 ELSE 0 END) AS late
	FROM ` + endedFrom + ` WHERE ` + endedCond + `
	GROUP BY worker
) e ON e.worker = w.name
ORDER BY w.name`
}

// Queues returns every worker, by name, with its cap, its running count
// and its tasks counted by status: one query, which reads two partial
// indexes of the tasks rather than their rows. Its cost grows with the
// live tasks and with the ended ones the retention keeps (up to
// Config.MaxRows), so it suits a console's or a scrape's pace rather than
// a hot path. Workers without
// tasks are listed with zero counts.
func (d *Dispatcher) Queues(ctx context.Context) ([]Queue, error) {
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	return d.st.queues(ctx, micros(d.clock.Now()))
}

func (s *store) queues(ctx context.Context, nowUS int64) ([]Queue, error) {
	rows, err := s.db.QueryContext(ctx, s.q(queuesQuery(s.d)), nowUS)
	if err != nil {
		return nil, fmt.Errorf("dispatch: read queues: %w", err)
	}
	defer rows.Close()
	out := []Queue{}
	for rows.Next() {
		var q Queue
		var waiting, running, finished, failed, cancelled int
		if err := rows.Scan(&q.Worker, &q.MaxRunning, &q.Running, &waiting, &running, &finished, &failed, &cancelled, &q.Due, &q.Late); err != nil {
			return nil, fmt.Errorf("dispatch: read queues: %w", err)
		}
		q.Tasks = map[Status]int{
			StatusWaiting: waiting, StatusRunning: running, StatusFinished: finished,
			StatusFailed: failed, StatusCancelled: cancelled,
		}
		out = append(out, q)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("dispatch: read queues: %w", err)
	}
	return out, nil
}
