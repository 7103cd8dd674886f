package regcenter

import (
	"errors"
	"sync/atomic"
)

// requestCounters counts the requests a center sends, behind its Stats.
type requestCounters struct {
	reads, writes, multis, watchReqs atomic.Int64
	// multiWrites counts the creates, sets and deletes inside
	// transactions (Stats.WriteOps, with writes).
	multiWrites atomic.Int64
	errs        atomic.Int64 // failed requests (Stats.Errors)
	// keepAlives counts etcd's lease keepalives apart from the requests:
	// they are the session's upkeep, as ZooKeeper's pings are.
	keepAlives atomic.Int64
}

// stats returns the requests counted so far, for backend.
func (c *requestCounters) stats(backend string) Stats {
	writes := c.writes.Load()
	return Stats{Reads: c.reads.Load(), Writes: writes, Multis: c.multis.Load(), Watches: c.watchReqs.Load(),
		WriteOps: writes + c.multiWrites.Load(), Errors: c.errs.Load(), Backend: backend}
}

// countWriteOps counts the write operations of a transaction about to be
// sent: every op but a check.
func (c *requestCounters) countWriteOps(ops []Op) {
	n := 0
	for _, op := range ops {
		if _, check := op.(CheckOp); !check {
			n++
		}
	}
	c.multiWrites.Add(int64(n))
}

// counted counts err in Stats.Errors when it is a failure rather than an
// answer, and returns it.
func (c *requestCounters) counted(err error) error {
	if err == nil || errors.Is(err, ErrNoNode) || errors.Is(err, ErrNodeExists) ||
		errors.Is(err, ErrBadVersion) || errors.Is(err, ErrNotEmpty) {
		return err
	}
	c.errs.Add(1)
	return err
}
