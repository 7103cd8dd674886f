package backend

import (
	"errors"
	"sync/atomic"

	"github.com/shardjob/shardjob/regcenter"
)

// Counters counts the requests a center sends, behind its Stats.
type Counters struct {
	Reads, Writes, Multis, Watches atomic.Int64
	// MultiWrites counts the creates, sets and deletes inside
	// transactions (Stats.WriteOps, with Writes).
	MultiWrites atomic.Int64
	// Errs counts the failed requests (Stats.Errors).
	Errs atomic.Int64
	// KeepAlives counts etcd's lease keepalives apart from the requests:
	// they are the session's upkeep, as ZooKeeper's pings are.
	KeepAlives atomic.Int64
}

// Stats returns the requests counted so far, for backend (a
// regcenter.Backend... name).
func (c *Counters) Stats(backend string) regcenter.Stats {
	writes := c.Writes.Load()
	return regcenter.Stats{Reads: c.Reads.Load(), Writes: writes, Multis: c.Multis.Load(), Watches: c.Watches.Load(),
		WriteOps: writes + c.MultiWrites.Load(), Errors: c.Errs.Load(), Backend: backend}
}

// CountWriteOps counts the write operations of a transaction about to be
// sent: every op but a check.
func (c *Counters) CountWriteOps(ops []regcenter.Op) {
	n := 0
	for _, op := range ops {
		if _, check := op.(regcenter.CheckOp); !check {
			n++
		}
	}
	c.MultiWrites.Add(int64(n))
}

// Counted counts err in Stats.Errors when it is a failure rather than an
// answer (ErrNoNode, ErrNodeExists, ErrBadVersion and ErrNotEmpty are
// answers), and returns it.
func (c *Counters) Counted(err error) error {
	if err == nil || errors.Is(err, regcenter.ErrNoNode) || errors.Is(err, regcenter.ErrNodeExists) ||
		errors.Is(err, regcenter.ErrBadVersion) || errors.Is(err, regcenter.ErrNotEmpty) {
		return err
	}
	c.Errs.Add(1)
	return err
}
