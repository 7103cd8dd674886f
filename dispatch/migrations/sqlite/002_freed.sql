-- Slots freed by finishes recorded without the global row's lock
-- (PostgreSQL): each finish adds a row per worker, and a claim, holding
-- that lock, folds the rows into the running counts of dispatch_global and
-- dispatch_workers before it reads them. The running counts that readers
-- see are the stored ones minus these. SQLite records finishes under its
-- write lock and never adds rows here.
CREATE TABLE dispatch_freed (
    worker TEXT NOT NULL,
    n      INTEGER NOT NULL CHECK (n > 0)
);
