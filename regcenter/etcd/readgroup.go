package etcd

import (
	"context"

	"github.com/shardjob/shardjob/regcenter"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The first reads of WatchNow, and the single-node reads (Get, Exists,
// Children), go in groups. A scheduler starting thousands of jobs arms two
// watches for each, side by side, and each watch reads its node's state
// once; a death has every job it led reshard at once, each reading every
// server's children: one transaction per read cost the client and the
// member a gRPC call each, more than the read itself, and a burst of them
// took both cores from the fires due then. So one goroutine of the center
// sends them: it takes the first read waiting and every other read queued
// by then, up to what one transaction may hold, and asks for all of them
// in one read-only transaction, so at one revision. A read that finds
// nothing else waiting goes at once, alone: a lone read pays no wait.

// Bounds of one group: etcd's default --max-txn-ops is 128 (etcdReadBatch
// keeps below it), and the ranges' keys stay far below its request limit.
const maxReadGroupBytes = 256 << 10

// queuedRead is one read queued for the reader (a WatchNow's first read, or
// a plain Get, Exists or Children) and, once done is closed, its answer.
type queuedRead struct {
	path     string // clean
	children bool
	// plain is a read of Get, Exists or Children, not WatchNow's: a group
	// of them alone counts as a read, not a watch's (Stats).
	plain bool

	st   regcenter.WatchState
	data []byte // the node's data, of a read that is not children's
	err  error
	done chan struct{}
}

// appendReadOps appends the ranges that read r's state to dst.
func (e *Center) appendReadOps(dst []clientv3.Op, r *queuedRead) []clientv3.Op {
	if r.children {
		return e.appendChildrenOps(dst, r.path)
	}
	return e.appendStatOps(dst, r.path)
}

// groupRead queues r for the reader and waits for its answer, or for ctx.
// An answer that comes after ctx ended is dropped.
func (e *Center) groupRead(ctx context.Context, r *queuedRead) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.done = make(chan struct{})
	select {
	case e.reads <- r:
	case <-ctx.Done():
		return ctx.Err()
	case <-e.done:
		return regcenter.ErrClosed
	}
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// readLoop is the reader: it sends the queued reads in groups until ctx
// ends, then answers the reads still queued with ErrClosed.
func (e *Center) readLoop(ctx context.Context) {
	var group []*queuedRead
	var ops []clientv3.Op
	var next *queuedRead // taken, but over the bounds of the group before it
	for {
		if next == nil {
			select {
			case <-ctx.Done():
				for {
					select {
					case r := <-e.reads:
						r.err = regcenter.ErrClosed
						close(r.done)
					default:
						return
					}
				}
			case next = <-e.reads:
			}
		}
		group = append(group[:0], next)
		ops = e.appendReadOps(ops[:0], next)
		size := opsBytes(ops)
		next = nil
	fill:
		for {
			select {
			case r := <-e.reads:
				n := len(ops)
				ops = e.appendReadOps(ops, r)
				if len(ops) > etcdReadBatch || size+opsBytes(ops[n:]) > maxReadGroupBytes {
					clear(ops[n:])
					ops = ops[:n]
					next = r
					break fill
				}
				group = append(group, r)
				size += opsBytes(ops[n:])
			default:
				break fill
			}
		}
		e.readGroup(ctx, group, ops)
		clear(group)
		clear(ops)
	}
}

// opsBytes is about what ops add to a request.
func opsBytes(ops []clientv3.Op) int {
	n := 0
	for _, op := range ops {
		n += len(op.KeyBytes()) + len(op.RangeBytes()) + 16
	}
	return n
}

// readGroup reads the state of every read of group (whose ranges are ops,
// in order) in one transaction, and answers each.
func (e *Center) readGroup(ctx context.Context, group []*queuedRead, ops []clientv3.Op) {
	var rs []*etcdRange
	counter := &e.counters.Reads
	for _, r := range group {
		if !r.plain {
			counter = &e.counters.Watches
			break
		}
	}
	err := e.do(ctx, counter, func(ctx context.Context) error {
		resp, err := e.cli.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return err
		}
		rs = ranges(resp)
		e.see(resp.Header.Revision)
		return nil
	})
	if err == nil && len(rs) != len(ops) {
		err = regcenter.ErrConnectionLoss // not what was asked: nothing is known
	}
	for _, r := range group {
		switch {
		case err != nil:
			r.err = err
		case r.children:
			if rs[0].count > 0 {
				r.st = regcenter.WatchState{Exists: true, Children: e.childNames(r.path, rs[1])}
			}
			rs = rs[2:]
		default:
			if data, s, ok := statOf(rs); ok {
				r.st = regcenter.WatchState{Exists: true, Stat: s}
				r.data = data
			}
			rs = rs[3:]
		}
		close(r.done)
	}
}

// groupedRead reads r's state in a group, and reads again after a lost
// connection as retryingRead does: the single-node reads' way.
func (e *Center) groupedRead(ctx context.Context, r *queuedRead) error {
	r.plain = true
	return e.retry(ctx, func() error { return e.groupRead(ctx, r) })
}
