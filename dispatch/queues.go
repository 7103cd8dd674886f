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
	// with 0 when the worker has none in it.
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

// queuesQuery counts every worker's tasks by status in one pass over the
// tasks table. The running count is the stored one less the slots freed
// since the last claim, as workerCols reads it.
const queuesQuery = `SELECT w.name, w.max_running,
	w.running - COALESCE((SELECT sum(f.n) FROM dispatch_freed f WHERE f.worker = w.name), 0),
	COALESCE(sum(CASE WHEN t.status = 'waiting' THEN 1 ELSE 0 END), 0),
	COALESCE(sum(CASE WHEN t.status = 'running' THEN 1 ELSE 0 END), 0),
	COALESCE(sum(CASE WHEN t.status = 'finished' THEN 1 ELSE 0 END), 0),
	COALESCE(sum(CASE WHEN t.status = 'failed' THEN 1 ELSE 0 END), 0),
	COALESCE(sum(CASE WHEN t.status = 'cancelled' THEN 1 ELSE 0 END), 0),
	COALESCE(sum(CASE WHEN t.status = 'waiting' AND t.run_at <= ? THEN 1 ELSE 0 END), 0),
	COALESCE(sum(CASE WHEN t.late <> 0 THEN 1 ELSE 0 END), 0)
FROM dispatch_workers w LEFT JOIN dispatch_tasks t ON t.worker = w.name
GROUP BY w.name, w.max_running, w.running
ORDER BY w.name`

// Queues returns every worker, by name, with its cap, its running count
// and its tasks counted by status: one query, which reads every task row
// (finished, failed and cancelled ones included), so it suits a console's
// or a scrape's pace rather than a hot path. Workers without tasks are
// listed with zero counts.
func (d *Dispatcher) Queues(ctx context.Context) ([]Queue, error) {
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	return d.st.queues(ctx, micros(d.clock.Now()))
}

func (s *store) queues(ctx context.Context, nowUS int64) ([]Queue, error) {
	rows, err := s.db.QueryContext(ctx, s.q(queuesQuery), nowUS)
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
