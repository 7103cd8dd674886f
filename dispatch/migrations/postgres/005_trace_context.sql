-- The W3C trace context of the Assign call that created a task, so that
-- its dispatches can link to that trace: the traceparent, followed by a
-- newline and the tracestate when the span had one. NULL when the caller
-- had no span or the assigning dispatcher traced nothing. A nullable
-- column without a default changes only the catalog: no row is rewritten,
-- however many the table holds.
ALTER TABLE dispatch_tasks ADD COLUMN trace_context TEXT;
