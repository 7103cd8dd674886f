package postgres

// SetLogRetention lowers the change log's retention, for tests that make a
// watcher fall behind it.
func (c *Center) SetLogRetention(revisions int64) { c.retention.Store(revisions) }

// HeartbeatNow sends one heartbeat (renewal, reaping, pruning) at once and
// reports whether it was answered.
func (c *Center) HeartbeatNow() bool { return c.heartbeatOnce(c.life) }

// PauseWatches holds the watch dispatcher until the returned func is
// called: the dispatcher finishes what it is doing, then waits.
func (c *Center) PauseWatches() (resume func()) {
	hold := make(chan struct{})
	c.watches.enqueue(task{kind: taskHold, hold: hold})
	return func() { close(hold) }
}

// PollNow reads the change log once from the dispatcher's position, as
// the watch dispatcher's poll does, and returns its error.
func (c *Center) PollNow() error {
	_, err := c.readLog(c.life)
	return err
}

// MigrationsForTest are the schema's migrations, for a test that builds a
// database at an older version.
var MigrationsForTest = migrations

// Seen is the highest revision c has seen: what its next write is sent
// with.
func (c *Center) Seen() int64 { return c.seen.Load() }

// ReadNodesQuery and ReadChildrenQuery are the grouped reads' statements.
const (
	ReadNodesQuery    = readNodesQuery
	ReadChildrenQuery = readChildrenQuery
)
