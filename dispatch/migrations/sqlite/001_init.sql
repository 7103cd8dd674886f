-- The dispatcher's schema: one global row, one row per worker (tenant),
-- one row per task, one row per live node (its lease).
CREATE TABLE dispatch_global (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    max_running INTEGER NOT NULL CHECK (max_running >= 0),
    running     INTEGER NOT NULL CHECK (running >= 0)
);
INSERT INTO dispatch_global (id, max_running, running) VALUES (1, 100, 0);

CREATE TABLE dispatch_workers (
    name           TEXT PRIMARY KEY,
    max_running    INTEGER NOT NULL CHECK (max_running >= 0),
    running        INTEGER NOT NULL CHECK (running >= 0),
    late_policy    TEXT NOT NULL CHECK (late_policy IN ('run', 'fail')),
    webhook_url    TEXT NOT NULL,
    webhook_secret TEXT NOT NULL
);

CREATE TABLE dispatch_tasks (
    uuid             TEXT PRIMARY KEY,
    worker           TEXT NOT NULL REFERENCES dispatch_workers (name),
    external_id      TEXT NOT NULL,
    info             BLOB,
    expected_start   BIGINT NOT NULL,
    acceptable_start BIGINT NOT NULL,
    run_at           BIGINT NOT NULL,
    status           TEXT NOT NULL,
    attempts         INTEGER NOT NULL,
    max_retries      INTEGER NOT NULL CHECK (max_retries >= 0),
    timeout_us       BIGINT NOT NULL CHECK (timeout_us > 0),
    lease_owner      TEXT NOT NULL,
    deadline         BIGINT NOT NULL,
    late             INTEGER NOT NULL,
    created_at       BIGINT NOT NULL,
    started_at       BIGINT NOT NULL,
    ended_at         BIGINT NOT NULL,
    last_error       TEXT NOT NULL,
    UNIQUE (worker, external_id)
);
CREATE INDEX dispatch_tasks_waiting ON dispatch_tasks (worker, acceptable_start, expected_start, uuid) WHERE status = 'waiting';
CREATE INDEX dispatch_tasks_run_at ON dispatch_tasks (run_at) WHERE status = 'waiting';
CREATE INDEX dispatch_tasks_deadline ON dispatch_tasks (deadline) WHERE status = 'running';
CREATE INDEX dispatch_tasks_owner ON dispatch_tasks (lease_owner) WHERE status = 'running';

CREATE TABLE dispatch_nodes (
    id      TEXT PRIMARY KEY,
    expires BIGINT NOT NULL
);
