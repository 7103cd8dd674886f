-- One index of the running tasks instead of two. A claim inserts every
-- task it starts into each index whose predicate the running row meets,
-- and dispatch_tasks_owner (lease_owner) WHERE status = 'running' was
-- one such insert per start for the rare statements that read the tasks
-- of one lease: the give-back of a stopping node, the sweep's check of
-- its own attempts (which reaches them by uuid), the reap's search for
-- running tasks whose lease is gone (which reads every running task
-- anyway). They read this index instead: every running task in deadline
-- order, the lease included, so that the reap's look for orphans is an
-- index-only scan. The timeouts read it as they read
-- dispatch_tasks_deadline, which it replaces: the overdue ones first.
CREATE INDEX dispatch_tasks_running ON dispatch_tasks (deadline) INCLUDE (lease_owner) WHERE status = 'running';
DROP INDEX dispatch_tasks_deadline;
DROP INDEX dispatch_tasks_owner;
