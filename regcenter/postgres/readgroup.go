package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardjob/shardjob/regcenter"
)

// The reads of WatchNow go in groups. A scheduler starting thousands of
// jobs arms two watches for each, side by side, and each watch reads its
// node's state once; one transaction per read cost the server ten times
// what the watch's node was worth. So one goroutine of the center sends
// them: it takes the first read waiting, and every other read queued by
// then (up to maxReadGroup), and asks for all of them in one round trip —
// one statement for the nodes' states, one for their children, each read
// with the namespace's revision in its own statement, as a lone read is.
// A read that finds nothing else waiting goes at once, alone, so a lone
// WatchNow pays no wait.

// maxReadGroup bounds the reads of one group.
const maxReadGroup = 1000

// readReq is one WatchNow read and, once done is closed, its answer.
type readReq struct {
	path     string // clean
	children bool

	exists bool
	stat   regcenter.Stat
	kids   []string
	rev    int64
	err    error
	done   chan struct{}
}

// groupRead queues r for the reader and waits for its answer, or for ctx.
// An answer that comes after ctx ended is dropped.
func (c *Center) groupRead(ctx context.Context, r *readReq) error {
	r.done = make(chan struct{})
	select {
	case c.reads <- r:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.life.Done():
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
// ends, and answers the reads still queued then with ErrClosed.
func (c *Center) readLoop(ctx context.Context) {
	group := make([]*readReq, 0, maxReadGroup)
	for {
		select {
		case <-ctx.Done():
			for {
				select {
				case r := <-c.reads:
					r.err = regcenter.ErrClosed
					close(r.done)
				default:
					return
				}
			}
		case r := <-c.reads:
			group = append(group[:0], r)
		}
	fill:
		for len(group) < maxReadGroup {
			select {
			case r := <-c.reads:
				group = append(group, r)
			default:
				break fill
			}
		}
		err := c.retryingRead(ctx, &c.counters.watchReqs, func(ctx context.Context) error { return c.readGroup(ctx, group) })
		for _, r := range group {
			if err != nil {
				r.err = err
			}
			close(r.done)
		}
		clear(group)
	}
}

// readNodesQuery reads the stat of each node of $2 in namespace $1, one
// row each, in order, and the namespace's revision.
const readNodesQuery = `SELECT ns.rev, p.i, n.version, n.cversion, n.owner, n.czxid, n.mzxid, n.ctime, n.mtime, n.numchildren, length(n.data)
	FROM shardjob_rc_ns ns CROSS JOIN unnest($2::text[]) WITH ORDINALITY AS p(path, i)
	LEFT JOIN shardjob_rc_nodes n ON n.ns = ns.ns AND n.path = p.path WHERE ns.ns = $1`

// readChildrenQuery reads, for each path of $2 in namespace $1, whether
// the node exists and its children's names, one row each, in order, and
// the namespace's revision.
const readChildrenQuery = `SELECT ns.rev, p.i,
		EXISTS (SELECT 1 FROM shardjob_rc_nodes WHERE ns = $1 AND path = p.path),
		coalesce((SELECT array_agg(name) FROM shardjob_rc_nodes WHERE ns = $1 AND parent = p.path), '{}')
	FROM shardjob_rc_ns ns CROSS JOIN unnest($2::text[]) WITH ORDINALITY AS p(path, i) WHERE ns.ns = $1`

// readGroup reads the state of every read of group in one round trip.
func (c *Center) readGroup(ctx context.Context, group []*readReq) error {
	var nodes, parents []string
	for _, r := range group {
		r.err = nil
		if r.children {
			parents = append(parents, r.path)
		} else {
			nodes = append(nodes, r.path)
		}
	}
	b := &pgx.Batch{}
	if len(nodes) > 0 {
		b.Queue(readNodesQuery, c.ns, nodes)
	}
	if len(parents) > 0 {
		b.Queue(readChildrenQuery, c.ns, parents)
	}
	br := c.pool.SendBatch(ctx, b)
	defer br.Close()
	// The rows come in the order of each statement's paths: the i-th read
	// of each kind is the i-th read of that kind in group.
	byKind := func(children bool) []*readReq {
		var out []*readReq
		for _, r := range group {
			if r.children == children {
				out = append(out, r)
			}
		}
		return out
	}
	if len(nodes) > 0 {
		reqs := byKind(false)
		rows, err := br.Query()
		if err != nil {
			return err
		}
		seen := 0
		for rows.Next() {
			var rev, i int64
			var owner *int64
			var s struct {
				v, cv, nc, dl *int32
				cz, mz        *int64
				ct, mt        *time.Time
			}
			if err := rows.Scan(&rev, &i, &s.v, &s.cv, &owner, &s.cz, &s.mz, &s.ct, &s.mt, &s.nc, &s.dl); err != nil {
				rows.Close()
				return err
			}
			if i < 1 || int(i) > len(reqs) {
				rows.Close()
				return fmt.Errorf("regcenter: a grouped read answered for path %d of %d", i, len(reqs))
			}
			r := reqs[i-1]
			r.rev, r.exists = rev, s.v != nil
			if r.exists {
				r.stat = regcenter.Stat{Version: *s.v, CVersion: *s.cv, EphemeralOwner: *owner, Czxid: *s.cz, Mzxid: *s.mz,
					Ctime: *s.ct, Mtime: *s.mt, NumChildren: *s.nc, DataLength: *s.dl}
			}
			seen++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if seen != len(reqs) {
			return pgx.ErrNoRows // the namespace's row is gone, as a lone read would find
		}
	}
	if len(parents) > 0 {
		reqs := byKind(true)
		rows, err := br.Query()
		if err != nil {
			return err
		}
		seen := 0
		for rows.Next() {
			var rev, i int64
			var ok bool
			var kids []string
			if err := rows.Scan(&rev, &i, &ok, &kids); err != nil {
				rows.Close()
				return err
			}
			if i < 1 || int(i) > len(reqs) {
				rows.Close()
				return fmt.Errorf("regcenter: a grouped read answered for path %d of %d", i, len(reqs))
			}
			r := reqs[i-1]
			if kids == nil {
				kids = []string{}
			}
			r.rev, r.exists, r.kids = rev, ok, kids
			seen++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if seen != len(reqs) {
			return pgx.ErrNoRows
		}
	}
	return nil
}
