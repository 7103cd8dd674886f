-- One index of the live tasks serves both the claims and Queues. A claim
-- reads each worker's first waiting tasks in EDF order from it (worker and
-- status equal, then acceptable_start, expected_start, uuid: no sort), and
-- no index of the tasks has run_at in its key any more: with run_at as a
-- key after worker and status (003's dispatch_tasks_live), a planner
-- without statistics on a fresh backlog took a worker's due tasks for a
-- handful, read them all through that key and sorted them to find the
-- first few, on every claim. Queues still counts the live tasks from this
-- index alone (an index-only scan: run_at and late are included). The
-- waiting index of 001 is the waiting part of this one, and goes.
DROP INDEX dispatch_tasks_live;
CREATE INDEX dispatch_tasks_live ON dispatch_tasks (worker, status, acceptable_start, expected_start, uuid) INCLUDE (run_at, late) WHERE status IN ('waiting', 'running');
DROP INDEX dispatch_tasks_waiting;
