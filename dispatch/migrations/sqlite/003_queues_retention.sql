-- Queues counts the live tasks of every worker from this index alone (a
-- covering index over the waiting and running tasks), however many ended
-- tasks the table keeps.
CREATE INDEX dispatch_tasks_live ON dispatch_tasks (worker, status, run_at, late) WHERE status IN ('waiting', 'running');

-- The ended tasks, oldest first: the retention finds those past MaxAge or
-- beyond the MaxRows most recently ended without reading the live ones, and
-- Queues counts them by worker from the index alone (SQLite has no
-- INCLUDE: the counted columns follow the key). Its predicate is the
-- retention's, word for word.
CREATE INDEX dispatch_tasks_ended ON dispatch_tasks (ended_at, uuid, worker, status, late) WHERE status IN ('finished', 'failed', 'cancelled');
