package registration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"sync"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// Trees of new jobs go into one transaction up to these bounds: the
// server's work per transaction, not per node, is most of a new job's cost.
const (
	// TreesPerTxn is the most jobs' trees in one transaction.
	TreesPerTxn = 32
	// TreeBytesPerTxn is the most bytes (paths and data) of the trees in
	// one transaction.
	TreeBytesPerTxn = 256 << 10
)

// Hostname is what a server node holds.
var Hostname = sync.OnceValue(func() string {
	h, _ := os.Hostname()
	return h
})

// Tree says what a new job's tree holds (see TreeOps).
type Tree struct {
	Paths  layout.Job
	Server string // this instance's server id
	Host   string // what the server node holds
	Config []byte // the config node's document
	// Failover puts the failover queue in the tree; Prepares the election
	// latch's parent (the instance prepares at registration).
	Failover, Prepares bool
	// Items, when positive, puts the execution node and the nodes of
	// items 0..Items-1 in the tree: for a job about to fire, whose
	// instances' first marks then find their items' nodes made rather than
	// make them (a failed transaction, a read and a transaction more, on
	// each instance's first fire, as a fleet starts). At most TreeItems.
	Items int
}

// TreeItems is the most item nodes a new job's tree makes (Tree.Items):
// a job with more makes them at its first marks, a transaction per chunk,
// and its tree stays well within a default etcd's 128 operations.
const TreeItems = 16

// TreeOps are the operations that make a new job's tree: the job node,
// the config node (this instance's config), this server's node and status,
// and leader/sharding with the necessary flag. The failover queue, the
// election latch's parent and the items' execution nodes are made on
// demand, by their first writer: ZooKeeper's cost of a new job is per
// node, and an idle job needs none of them. They are in the tree only for
// a job that needs them at once: the queue with failover on, the latch's
// parent when this instance prepares at registration, the item nodes
// when the job is about to fire (Items).
func TreeOps(t Tree) []regcenter.Op {
	p, id := t.Paths, t.Server
	ops := []regcenter.Op{
		regcenter.CreateOp{Path: p.Root()},
		regcenter.CreateOp{Path: p.Config(), Data: t.Config},
		regcenter.CreateOp{Path: p.Servers()},
		regcenter.CreateOp{Path: p.Server(id), Data: []byte(t.Host)},
		regcenter.CreateOp{Path: p.Flag(id, layout.Status), Data: []byte(layout.StatusReady), Mode: regcenter.Ephemeral},
		regcenter.CreateOp{Path: p.Leader()},
		regcenter.CreateOp{Path: p.ShardingEpoch()},
		regcenter.CreateOp{Path: p.Necessary()},
	}
	if t.Failover {
		ops = append(ops,
			regcenter.CreateOp{Path: path.Dir(p.FailoverItems())},
			regcenter.CreateOp{Path: p.FailoverItems()})
	}
	if t.Prepares {
		ops = append(ops,
			regcenter.CreateOp{Path: path.Dir(p.ElectionLatch())},
			regcenter.CreateOp{Path: p.ElectionLatch()})
	}
	if n := min(t.Items, TreeItems); n > 0 {
		ops = append(ops, regcenter.CreateOp{Path: p.Execution()})
		for it := range n {
			ops = append(ops, regcenter.CreateOp{Path: p.Item(it)})
		}
	}
	return ops
}

// opsSize is what ops weigh against TreeBytesPerTxn: their paths and data.
func opsSize(ops []regcenter.Op) int {
	n := 0
	for _, op := range ops {
		switch o := op.(type) {
		case regcenter.CreateOp:
			n += len(o.Data) + len(o.Path)
		case regcenter.SetOp:
			n += len(o.Data) + len(o.Path)
		}
	}
	return n
}

// leftOut reports whether a transaction's err says that one job's ops
// cannot go in as they are: a node of it exists, a node it needs is gone,
// or one it read has moved.
func leftOut(err error) (*regcenter.MultiError, bool) {
	var me *regcenter.MultiError
	ok := errors.As(err, &me) && (errors.Is(me.Err, regcenter.ErrNodeExists) || errors.Is(me.Err, regcenter.ErrNoNode) ||
		errors.Is(me.Err, regcenter.ErrBadVersion))
	return me, ok
}

// CreateTrees makes the trees of n new jobs, several to a transaction,
// and reports which it made (made[i] for the i-th). ops(i) gives the i-th
// job's tree (TreeOps); an error from it ends CreateTrees, the batch
// gathered since the last transaction left unmade. A job whose node exists
// already (or whose tree cannot go into a transaction: the namespace root
// is gone, or the config is too large) is left out, having changed
// nothing, and its start registers it node by node, which also creates
// whatever is missing. name(i) names the i-th job in an error.
func CreateTrees(ctx context.Context, rc regcenter.Center, n int, ops func(i int) ([]regcenter.Op, error), name func(i int) string) ([]bool, error) {
	return commit(ctx, rc, n, ops, name, "registering new jobs")
}

// commit sends the ops of n jobs (ops(i) for the i-th; none: the job is
// not sent), several jobs to a transaction up to TreesPerTxn and
// TreeBytesPerTxn, and reports which jobs' ops it applied. A job whose ops
// cannot go in as they are (leftOut) or are too large for a transaction
// is left out, having changed nothing, and the others are sent again
// without it. An error from ops ends commit, the batch gathered since the
// last transaction left unsent; what names the work in its errors.
func commit(ctx context.Context, rc regcenter.Center, n int, ops func(i int) ([]regcenter.Op, error), name func(i int) string, what string) ([]bool, error) {
	made := make([]bool, n)
	type job struct {
		i   int
		ops []regcenter.Op
	}
	var batch []job
	size := 0
	flush := func() error {
		for len(batch) > 0 {
			var all []regcenter.Op
			for _, t := range batch {
				all = append(all, t.ops...)
			}
			err := rc.Multi(ctx, all...)
			if err == nil {
				for _, t := range batch {
					made[t.i] = true
				}
				break
			}
			me, out := leftOut(err)
			switch {
			case out:
				// Leave out the job whose op failed, and try the rest.
				at, n := 0, len(batch)
				for i, t := range batch {
					if at += len(t.ops); me.Index < at {
						batch = append(batch[:i:i], batch[i+1:]...)
						break
					}
				}
				if len(batch) == n {
					return fmt.Errorf("%s: %w", what, err)
				}
				if errors.Is(me.Err, regcenter.ErrNodeExists) && len(batch) > 1 {
					// Another instance makes the same jobs (a fleet
					// starting at once): leave out, from one read, every
					// job whose first node exists, not one a transaction.
					batch = withoutExisting(ctx, rc, batch, func(t job) []regcenter.Op { return t.ops })
				}
			case errors.Is(err, regcenter.ErrTooLarge) && len(batch) > 1:
				// One job's data is large: every job on its own.
				for _, t := range batch {
					ok, err := commitOne(ctx, rc, t.ops)
					if err != nil {
						return fmt.Errorf("job %q: register: %w", name(t.i), err)
					}
					made[t.i] = ok
				}
				batch = nil
			case errors.Is(err, regcenter.ErrTooLarge):
				batch = nil
			default:
				return fmt.Errorf("%s: %w", what, err)
			}
		}
		batch, size = nil, 0
		return nil
	}
	for i := range n {
		o, err := ops(i)
		if err != nil {
			return made, err
		}
		if len(o) == 0 {
			continue
		}
		sz := opsSize(o)
		if len(batch) > 0 && (len(batch) >= TreesPerTxn || size+sz > TreeBytesPerTxn) {
			if err := flush(); err != nil {
				return made, err
			}
		}
		batch = append(batch, job{i: i, ops: o})
		size += sz
	}
	return made, flush()
}

// commitOne sends one job's ops on their own (see commit) and reports
// whether they were applied.
func commitOne(ctx context.Context, rc regcenter.Center, ops []regcenter.Op) (bool, error) {
	err := rc.Multi(ctx, ops...)
	if _, out := leftOut(err); out || errors.Is(err, regcenter.ErrTooLarge) {
		return false, nil
	}
	return err == nil, err
}

// withoutExisting returns batch without the jobs whose first op creates a
// node that exists, read in one request (GetMany); ops(t) are t's ops.
// When the read fails, batch is returned as it is: each job that exists
// is then left out by its own failed transaction.
func withoutExisting[T any](ctx context.Context, rc regcenter.Center, batch []T, ops func(T) []regcenter.Op) []T {
	var paths []string
	var at []int // at[k]: batch's index of paths[k]
	for i, t := range batch {
		if o := ops(t); len(o) > 0 {
			if c, ok := o[0].(regcenter.CreateOp); ok {
				paths = append(paths, c.Path)
				at = append(at, i)
			}
		}
	}
	if len(paths) == 0 {
		return batch
	}
	found, err := rc.GetMany(ctx, paths...)
	if err != nil || len(found) != len(paths) {
		return batch
	}
	exists := make(map[int]bool, len(at))
	for k, f := range found {
		if f.Exists {
			exists[at[k]] = true
		}
	}
	out := batch[:0:0]
	for i, t := range batch {
		if !exists[i] {
			out = append(out, t)
		}
	}
	return out
}
