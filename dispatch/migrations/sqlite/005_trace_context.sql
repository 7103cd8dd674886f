-- The W3C trace context of the Assign call that created a task, so that
-- its dispatches can link to that trace: the traceparent, followed by a
-- newline and the tracestate when the span had one. NULL when the caller
-- had no span or the assigning dispatcher traced nothing. The number
-- follows PostgreSQL's 004, which SQLite has no counterpart of, so that
-- migration 005 is the same change on both stores.
ALTER TABLE dispatch_tasks ADD COLUMN trace_context TEXT;
