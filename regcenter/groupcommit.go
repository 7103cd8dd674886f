package regcenter

import (
	"context"
	"errors"
	"sync"
	"time"
)

// GroupCommit returns c with its Multi calls committed in groups: a call
// made while another is in flight waits for it, and the calls that waited
// meanwhile go to ZooKeeper as one transaction. With nothing in flight a
// call goes at once, so a lone caller pays no wait; under load (the jobs
// of an instance firing at the same second, each marking its items and
// then completing them) the server applies and logs one transaction where
// it applied many.
//
// Each caller gets what a Multi of its own ops alone would have given:
// when the group's transaction fails, nothing of it was applied, and every
// call of the group is sent again on its own (a transaction that failed on
// one caller's op says nothing of the others'). Calls of one group apply
// together and atomically, in the order they were made; concurrent calls
// have no order of their own to keep, so that is one they could have had.
// A call whose ctx ends while it waits returns ctx's error; if its ops
// were sent already, whether they applied is unknown, as for a lone Multi
// abandoned by its context.
//
// A group holds at most maxGroupOps ops and maxGroupBytes of data and
// paths; a call larger than that goes alone. Everything but Multi is c's.
func GroupCommit(c Center) Center {
	if g, ok := c.(*groupCommit); ok {
		return g
	}
	return &groupCommit{Center: c}
}

// The bounds of one group: well within ZooKeeper's 1 MB request limit,
// and no larger than the transactions the callers make on their own.
const (
	maxGroupOps   = 1000
	maxGroupBytes = 512 << 10
	// groupTimeout bounds a group's transaction: it is no single caller's,
	// so it runs under none of their contexts.
	groupTimeout = 30 * time.Second
)

type groupCommit struct {
	Center

	mu    sync.Mutex
	queue []*pendingMulti
	busy  bool // a group is being committed; the next leader is queue[0]
	// spare is the array the group being committed is taken into, kept
	// for the next: one group at a time, so one array serves them all.
	spare []*pendingMulti
}

type pendingMulti struct {
	ops   []Op
	bytes int
	// note says, in turn, "commit the next group" (errLead), while the
	// call is queued, and the result, once its group has left the queue:
	// never both at once, so one buffered slot holds either.
	note chan error
}

// errLead is the note that makes a queued call the next group's leader.
var errLead = errors.New("regcenter: commit the next group")

func (g *groupCommit) Multi(ctx context.Context, ops ...Op) error {
	if len(ops) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	p := &pendingMulti{ops: ops, bytes: MultiBytes(ops...), note: make(chan error, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, p)
	if !g.busy {
		g.busy = true
		p.note <- errLead
	}
	g.mu.Unlock()
	for {
		select {
		case err := <-p.note:
			if err != errLead { // the sentinel itself, never wrapped
				return err
			}
			g.commitGroup()
		case <-ctx.Done():
			g.abandon(p)
			return ctx.Err()
		}
	}
}

// abandon takes p out of the queue if it is still there, passing the lead
// on if p held it.
func (g *groupCommit) abandon(p *pendingMulti) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, q := range g.queue {
		if q != p {
			continue
		}
		g.queue = append(g.queue[:i:i], g.queue[i+1:]...)
		select {
		case <-p.note: // queued: only the lead can be there
			g.passLeadLocked()
		default:
		}
		return
	}
}

// passLeadLocked makes the first waiting call the next group's leader, or
// marks nothing in flight.
func (g *groupCommit) passLeadLocked() {
	if len(g.queue) == 0 {
		g.busy = false
		return
	}
	g.queue[0].note <- errLead
}

// commitGroup takes the calls at the head of the queue (the leader is the
// first), commits them and passes the lead on.
func (g *groupCommit) commitGroup() {
	g.mu.Lock()
	n, ops, size := 0, 0, 0
	for _, p := range g.queue {
		if n > 0 && (ops+len(p.ops) > maxGroupOps || size+p.bytes > maxGroupBytes) {
			break
		}
		n, ops, size = n+1, ops+len(p.ops), size+p.bytes
	}
	// The queue keeps its array (calls queue without growing it), and the
	// group goes into the spare one.
	group := append(g.spare[:0], g.queue[:n]...)
	g.spare = nil
	rest := copy(g.queue, g.queue[n:])
	clear(g.queue[rest:])
	g.queue = g.queue[:rest]
	g.mu.Unlock()

	g.commit(group)
	clear(group)

	g.mu.Lock()
	g.spare = group
	g.passLeadLocked()
	g.mu.Unlock()
}

func (g *groupCommit) commit(group []*pendingMulti) {
	ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
	defer cancel()
	if len(group) == 1 {
		group[0].note <- g.Center.Multi(ctx, group[0].ops...)
		return
	}
	n := 0
	for _, p := range group {
		n += len(p.ops)
	}
	all := make([]Op, 0, n)
	for _, p := range group {
		all = append(all, p.ops...)
	}
	err := g.Center.Multi(ctx, all...)
	if err == nil || !errors.As(err, new(*MultiError)) {
		// Applied for all, or unknown for all (no answer): what each
		// caller alone would have learnt.
		for _, p := range group {
			p.note <- err
		}
		return
	}
	// Nothing applied. Each call alone, concurrently (pipelined on the one
	// connection), in the order they came.
	var wg sync.WaitGroup
	for _, p := range group {
		wg.Add(1)
		go func() { // owned here: waited for below
			defer wg.Done()
			p.note <- g.Center.Multi(ctx, p.ops...)
		}()
	}
	wg.Wait()
}

// SessionTimeout is the wrapped center's session timeout, when it has one
// (DefaultSessionTimeout otherwise).
func (g *groupCommit) SessionTimeout() time.Duration {
	if z, ok := g.Center.(interface{ SessionTimeout() time.Duration }); ok {
		return z.SessionTimeout()
	}
	return DefaultSessionTimeout
}
