package regcenter

import (
	"errors"
	"sync/atomic"
)

// requestCounters counts the requests a center sends, behind its Stats.
type requestCounters struct {
	reads, writes, multis, watchReqs atomic.Int64
	errs                             atomic.Int64 // failed requests (Stats.Errors)
	// keepAlives counts etcd's lease keepalives apart from the requests:
	// they are the session's upkeep, as ZooKeeper's pings are.
	keepAlives atomic.Int64
}

// stats returns the requests counted so far, for backend.
func (c *requestCounters) stats(backend string) Stats {
	return Stats{Reads: c.reads.Load(), Writes: c.writes.Load(), Multis: c.multis.Load(), Watches: c.watchReqs.Load(),
		Errors: c.errs.Load(), Backend: backend}
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
