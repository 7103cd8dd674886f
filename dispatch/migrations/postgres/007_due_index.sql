-- Each worker's waiting tasks by run_at, so that a claim can count a
-- worker's due tasks (run_at <= now), at most as many as it could take,
-- without reading the others. The claim reads a worker's head in EDF order
-- from dispatch_tasks_live, where the due and the not yet due tasks are
-- mixed, and stops once it has as many as that count: without it, a worker
-- with fewer due tasks than free slots had every waiting task read on every
-- claim, the ones due in an hour or tomorrow too (590 ms a claim beside
-- 1,000,000 of them). A claim changes no row of this index (a started task
-- leaves its predicate): each task assigned, and each retry, adds an entry.
--
-- It replaces dispatch_tasks_run_at (run_at) of 001, so that assigning a
-- task costs no more index entries than before: through that one, the
-- count of one worker's due tasks read every other worker's due tasks too,
-- which the planner chose once the table was analyzed. The fetcher's look
-- for the next start reads this index, a probe per worker.
CREATE INDEX dispatch_tasks_due ON dispatch_tasks (worker, run_at) WHERE status = 'waiting';
DROP INDEX dispatch_tasks_run_at;
