package regcenter

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync/atomic"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// How a list of operations becomes one etcd transaction (see etcd.go for
// the key layout). The operations are replayed in order on an overlay of
// the nodes they touch, as ZooKeeper applies a multi. What an operation
// needs of the state before the transaction (a node absent, a parent
// present and persistent, a version, no children but those deleted earlier
// in the same transaction) is asked of an oracle: while planning, the
// oracle turns each need into a compare and assumes it holds; after a
// failed transaction, it answers from what was read back, and the first
// operation whose need fails is the one MultiError names.

// errEphemeralParent refuses a child of an ephemeral node, as ZooKeeper
// does.
var errEphemeralParent = errors.New("regcenter: ephemeral nodes may not have children")

// errRecreate refuses a transaction that deletes a node and creates it
// again: etcd cannot write one key twice in a transaction, and an
// overwrite would keep the old node's creation revision and version.
var errRecreate = errors.New("regcenter: a transaction on etcd cannot delete a node and create it again")

// oracle answers what an operation needs of the state before the
// transaction.
type oracle interface {
	absent(p string) error
	parent(q string) error
	version(p string, v int32) error
	noChildrenBut(p string, gone map[string]bool) error
	counter(q string) seqCounter
}

// simNode is a node's state in the overlay.
type simNode struct {
	exists   bool
	created  bool  // created by this transaction
	preGone  bool  // existed before and was deleted by it
	verKnown bool  // ver is the node's version
	ver      int32 // current version when verKnown
	delta    int32 // sets applied while the version is unknown
	lease    int64 // for created nodes
	data     []byte
	dataSet  bool
}

type plan struct {
	cmps     []clientv3.Cmp
	then     []clientv3.Op
	created  []string
	counters map[string]seqCounter // the counters' values after the transaction
	size     int
}

type planner struct {
	e        *Etcd
	or       oracle
	nodes    map[string]*simNode
	order    []string
	kids     map[string]map[string]bool // parent -> children touched
	changed  map[string]bool            // parents whose children changed
	seq      map[string]seqCounter      // counters in use: next value
	seqStart map[string]seqCounter
	created  []string
	lease    int64
}

func (e *Etcd) newPlanner(or oracle) *planner {
	e.mu.Lock()
	lease := int64(e.lease)
	e.mu.Unlock()
	return &planner{e: e, or: or, nodes: map[string]*simNode{}, kids: map[string]map[string]bool{},
		changed: map[string]bool{}, seq: map[string]seqCounter{}, seqStart: map[string]seqCounter{}, lease: lease}
}

func (pl *planner) node(p string) *simNode { return pl.nodes[p] }

func (pl *planner) put(p string, n *simNode) {
	if _, ok := pl.nodes[p]; !ok {
		pl.order = append(pl.order, p)
		if p != "/" {
			q := parentOf(p)
			if pl.kids[q] == nil {
				pl.kids[q] = map[string]bool{}
			}
			pl.kids[q][p] = true
		}
	}
	pl.nodes[p] = n
}

// requireExists makes sure p exists now with version v (-1: any).
func (pl *planner) requireExists(p string, v int32) (*simNode, error) {
	n := pl.node(p)
	if n == nil {
		if err := pl.or.version(p, v); err != nil {
			return nil, err
		}
		n = &simNode{exists: true}
		if v >= 0 {
			n.verKnown, n.ver = true, v
		}
		pl.put(p, n)
		return n, nil
	}
	if !n.exists {
		return nil, ErrNoNode
	}
	if v < 0 {
		return n, nil
	}
	if n.verKnown {
		if n.ver != v {
			return nil, ErrBadVersion
		}
		return n, nil
	}
	if err := pl.or.version(p, v-n.delta); err != nil {
		return nil, err
	}
	n.verKnown, n.ver, n.delta = true, v, 0
	return n, nil
}

func (pl *planner) step(op Op) error {
	switch o := op.(type) {
	case CreateOp:
		return pl.create(o)
	case SetOp:
		n, err := pl.requireExists(o.Path, o.Version)
		if err != nil {
			return err
		}
		if n.verKnown {
			n.ver++
		} else {
			n.delta++
		}
		n.data, n.dataSet = o.Data, true
		return nil
	case CheckOp:
		_, err := pl.requireExists(o.Path, o.Version)
		return err
	case DeleteOp:
		return pl.delete(o)
	}
	return fmt.Errorf("regcenter: unknown op %T", op)
}

func (pl *planner) create(o CreateOp) error {
	p := o.Path
	if p == "/" {
		return ErrNodeExists
	}
	q := parentOf(p)
	switch n := pl.node(q); {
	case n == nil:
		if err := pl.or.parent(q); err != nil {
			return err
		}
		pl.put(q, &simNode{exists: true})
	case !n.exists:
		return ErrNoNode
	case n.created:
		if n.lease != 0 {
			return errEphemeralParent
		}
	default: // existed before, touched earlier in the transaction
		if err := pl.or.parent(q); err != nil {
			return err
		}
	}
	if o.Mode == EphemeralSequential || o.Mode == PersistentSequential {
		c, ok := pl.seq[q]
		if !ok {
			c = pl.or.counter(q)
			pl.seqStart[q] = c
		}
		p += fmt.Sprintf("%010d", c.next)
		c.next++
		pl.seq[q] = c
	}
	if n := pl.node(p); n == nil {
		if err := pl.or.absent(p); err != nil {
			return err
		}
	} else if n.exists {
		return ErrNodeExists
	} else if n.preGone {
		return errRecreate
	}
	var lease int64
	if o.Mode == Ephemeral || o.Mode == EphemeralSequential {
		lease = pl.lease
	}
	pl.put(p, &simNode{exists: true, created: true, verKnown: true, lease: lease, data: o.Data, dataSet: true})
	pl.changed[q] = true
	pl.created = append(pl.created, p)
	return nil
}

func (pl *planner) delete(o DeleteOp) error {
	p := o.Path
	n, err := pl.requireExists(p, o.Version)
	if err != nil {
		return err
	}
	gone := map[string]bool{}
	for k := range pl.kids[p] {
		c := pl.nodes[k]
		switch {
		case c.exists:
			return ErrNotEmpty
		case c.preGone:
			gone[k] = true
		}
	}
	if !n.created {
		if err := pl.or.noChildrenBut(p, gone); err != nil {
			return err
		}
	}
	if n.created {
		n.exists, n.created = false, false
		n.dataSet = false
	} else {
		n.exists, n.preGone = false, true
	}
	if p != "/" {
		pl.changed[parentOf(p)] = true
	}
	return nil
}

// finish turns the overlay into the transaction's writes.
func (pl *planner) finish(cmps []clientv3.Cmp) *plan {
	e := pl.e
	out := &plan{cmps: cmps, created: pl.created, counters: map[string]seqCounter{}}
	for _, p := range pl.order {
		n := pl.nodes[p]
		switch {
		case n.exists && n.created:
			var opts []clientv3.OpOption
			if n.lease != 0 {
				opts = append(opts, clientv3.WithLease(clientv3.LeaseID(n.lease)))
			}
			out.then = append(out.then, clientv3.OpPut(e.nodeKey(p), string(n.data), opts...))
			out.size += len(e.nodeKey(p)) + len(n.data)
		case n.exists && n.dataSet:
			out.then = append(out.then, clientv3.OpPut(e.nodeKey(p), string(n.data), clientv3.WithIgnoreLease()))
			out.size += len(e.nodeKey(p)) + len(n.data)
		case n.preGone:
			out.then = append(out.then, clientv3.OpDelete(e.nodeKey(p)), clientv3.OpDelete(e.markerKey(p)), clientv3.OpDelete(e.counterKey(p)))
			out.size += len(e.nodeKey(p)) + len(e.markerKey(p)) + len(e.counterKey(p))
		}
	}
	parents := make([]string, 0, len(pl.changed))
	for q := range pl.changed {
		parents = append(parents, q)
	}
	sort.Strings(parents)
	for _, q := range parents {
		if n := pl.nodes[q]; n != nil && n.preGone {
			continue
		}
		out.then = append(out.then, clientv3.OpPut(e.markerKey(q), ""))
		out.size += len(e.markerKey(q))
	}
	seqs := make([]string, 0, len(pl.seq))
	for q := range pl.seq {
		seqs = append(seqs, q)
	}
	sort.Strings(seqs)
	for _, q := range seqs {
		c := pl.seq[q]
		out.counters[q] = seqCounter{next: c.next, version: pl.seqStart[q].version + 1}
		if n := pl.nodes[q]; n != nil && n.preGone {
			continue
		}
		out.then = append(out.then, clientv3.OpPut(e.counterKey(q), strconv.FormatInt(c.next, 10)))
		out.size += len(e.counterKey(q)) + 20
	}
	for i := range out.cmps {
		c := out.cmps[i].GetCompare()
		out.size += len(c.Key) + len(c.RangeEnd) + 16
	}
	out.size += 16 * len(out.then)
	return out
}

// cmpOracle assumes every need holds and records the compare that makes
// the transaction fail otherwise.
type cmpOracle struct {
	e        *Etcd
	cmps     []clientv3.Cmp
	counters map[string]seqCounter
}

func (c *cmpOracle) absent(p string) error {
	c.cmps = append(c.cmps, clientv3.Compare(clientv3.CreateRevision(c.e.nodeKey(p)), "=", 0))
	return nil
}

func (c *cmpOracle) parent(q string) error {
	k := c.e.nodeKey(q)
	c.cmps = append(c.cmps, clientv3.Compare(clientv3.CreateRevision(k), ">", 0), clientv3.Compare(clientv3.LeaseValue(k), "=", 0))
	return nil
}

func (c *cmpOracle) version(p string, v int32) error {
	k := c.e.nodeKey(p)
	if v < 0 {
		c.cmps = append(c.cmps, clientv3.Compare(clientv3.CreateRevision(k), ">", 0))
	} else {
		c.cmps = append(c.cmps, clientv3.Compare(clientv3.Version(k), "=", int64(v)+1))
	}
	return nil
}

// noChildrenBut compares every stretch of p's children range between the
// keys in gone with "no key here".
func (c *cmpOracle) noChildrenBut(p string, gone map[string]bool) error {
	start := c.e.childPrefix(p)
	end := clientv3.GetPrefixRangeEnd(start)
	keys := make([]string, 0, len(gone))
	for g := range gone {
		keys = append(keys, c.e.nodeKey(g))
	}
	sort.Strings(keys)
	for _, k := range append(keys, end) {
		if start < k {
			c.cmps = append(c.cmps, clientv3.Compare(clientv3.CreateRevision(start), "=", 0).WithRange(k))
		}
		start = k + "\x00"
	}
	return nil
}

func (c *cmpOracle) counter(q string) seqCounter {
	g := c.counters[q]
	k := c.e.counterKey(q)
	c.cmps = append(c.cmps, clientv3.Compare(clientv3.Version(k), "=", g.version))
	return g
}

// stateOracle answers from a read of the state.
type stateOracle struct {
	e        *Etcd
	nodes    map[string]*mvccpb.KeyValue // nil: absent
	kids     map[string][]string
	counters map[string]seqCounter
}

func (s *stateOracle) absent(p string) error {
	if s.nodes[p] != nil {
		return ErrNodeExists
	}
	return nil
}

func (s *stateOracle) parent(q string) error {
	kv := s.nodes[q]
	if kv == nil {
		return ErrNoNode
	}
	if kv.Lease != 0 {
		return errEphemeralParent
	}
	return nil
}

func (s *stateOracle) version(p string, v int32) error {
	kv := s.nodes[p]
	if kv == nil {
		return ErrNoNode
	}
	if v >= 0 && kv.Version-1 != int64(v) {
		return ErrBadVersion
	}
	return nil
}

func (s *stateOracle) noChildrenBut(p string, gone map[string]bool) error {
	for _, k := range s.kids[p] {
		if !gone[k] {
			return ErrNotEmpty
		}
	}
	return nil
}

func (s *stateOracle) counter(q string) seqCounter { return s.counters[q] }

// txnResult is what a successful transaction gives back.
type txnResult struct {
	created []string     // the paths created, in op order
	reads   []*etcdRange // the answers to the extra reads
}

// txn applies ops (clean paths) as one etcd transaction, then reads runs
// inside it. A failure is a *MultiError naming the first op that fails.
func (e *Etcd) txn(ctx context.Context, counter *atomic.Int64, ops []Op, reads []clientv3.Op) (txnResult, error) {
	var seqParents []string
	for _, op := range ops {
		if o, ok := op.(CreateOp); ok && (o.Mode == EphemeralSequential || o.Mode == PersistentSequential) {
			seqParents = append(seqParents, parentOf(o.Path))
		}
	}
	guesses, err := e.counterGuesses(ctx, seqParents)
	if err != nil {
		return txnResult{}, err
	}
	for attempt := 0; ; attempt++ {
		co := &cmpOracle{e: e, counters: guesses}
		pl := e.newPlanner(co)
		var failed bool
		for _, op := range ops {
			if err := pl.step(op); err != nil {
				failed = true // decided without the state: let the state name the op
				break
			}
		}
		if !failed {
			p := pl.finish(co.cmps)
			if p.size > etcdMaxRequestBytes-etcdRequestSlack {
				return txnResult{}, fmt.Errorf("%w: transaction of %d ops is %d bytes on etcd, over its request limit of %d",
					ErrTooLarge, len(ops), p.size, etcdMaxRequestBytes-etcdRequestSlack)
			}
			var resp *clientv3.TxnResponse
			err := e.do(ctx, counter, func(ctx context.Context) error {
				var err error
				resp, err = e.cli.Txn(ctx).If(p.cmps...).Then(append(p.then, reads...)...).Commit()
				return err
			})
			if err != nil {
				return txnResult{}, err
			}
			if resp.Succeeded {
				e.rememberCounters(p.counters)
				rs := ranges(resp)
				return txnResult{created: p.created, reads: rs}, nil
			}
		}
		// Find the op that failed, on the state as it is now.
		so, err := e.readState(ctx, ops, seqParents)
		if err != nil {
			return txnResult{}, err
		}
		spl := e.newPlanner(so)
		for i, op := range ops {
			if err := spl.step(op); err != nil {
				return txnResult{}, &MultiError{Index: i, Op: op, Err: err}
			}
		}
		// Nothing fails on the state read: it changed in between (or only
		// a sequence counter moved). Try again on what was read.
		if attempt >= etcdConflictRetries {
			return txnResult{}, fmt.Errorf("%w: the transaction kept conflicting with concurrent writes", ErrConnectionLoss)
		}
		guesses = so.counters
	}
}

// counterGuesses returns the last known value of each parent's sequence
// counter, reading the ones not known.
func (e *Etcd) counterGuesses(ctx context.Context, parents []string) (map[string]seqCounter, error) {
	out := map[string]seqCounter{}
	var missing []string
	e.seqMu.Lock()
	for _, q := range parents {
		if c, ok := e.seqGuess[q]; ok {
			out[q] = c
		} else {
			missing = append(missing, q)
		}
	}
	e.seqMu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	ops := make([]clientv3.Op, len(missing))
	for i, q := range missing {
		ops[i] = clientv3.OpGet(e.counterKey(q))
	}
	rs, _, err := e.readTxn(ctx, ops...)
	if err != nil {
		return nil, err
	}
	for i, q := range missing {
		out[q] = counterOf(rs[i])
	}
	return out, nil
}

func counterOf(r *etcdRange) seqCounter {
	if len(r.kvs) == 0 {
		return seqCounter{}
	}
	n, _ := strconv.ParseInt(string(r.kvs[0].Value), 10, 64) // written only by finish, as a decimal
	return seqCounter{next: n, version: r.kvs[0].Version}
}

// maxSeqGuesses bounds the cache of sequence counters.
const maxSeqGuesses = 4096

func (e *Etcd) rememberCounters(cs map[string]seqCounter) {
	if len(cs) == 0 {
		return
	}
	e.seqMu.Lock()
	defer e.seqMu.Unlock()
	if len(e.seqGuess)+len(cs) > maxSeqGuesses {
		clear(e.seqGuess)
	}
	for q, c := range cs {
		e.seqGuess[q] = c
	}
}

// readState reads what the ops need to be replayed: every node they name
// and the parents of creates, the children of deleted nodes, and the
// counters of sequential creates. Reads are batched below etcd's default
// limit of operations per transaction.
func (e *Etcd) readState(ctx context.Context, ops []Op, seqParents []string) (*stateOracle, error) {
	so := &stateOracle{e: e, nodes: map[string]*mvccpb.KeyValue{}, kids: map[string][]string{}, counters: map[string]seqCounter{}}
	type read struct {
		op   clientv3.Op
		into func(*etcdRange)
	}
	var rs []read
	seen := map[string]bool{}
	addNode := func(p string) {
		if seen[p] {
			return
		}
		seen[p] = true
		rs = append(rs, read{clientv3.OpGet(e.nodeKey(p)), func(r *etcdRange) {
			if len(r.kvs) > 0 {
				so.nodes[p] = r.kvs[0]
			}
		}})
	}
	for _, op := range ops {
		p := op.path()
		switch o := op.(type) {
		case CreateOp:
			if p != "/" {
				addNode(parentOf(p))
			}
			if o.Mode != EphemeralSequential && o.Mode != PersistentSequential {
				addNode(p)
			}
		case DeleteOp:
			addNode(p)
			if seen["kids:"+p] {
				continue
			}
			seen["kids:"+p] = true
			cp := e.childPrefix(p)
			rs = append(rs, read{clientv3.OpGet(cp, clientv3.WithPrefix(), clientv3.WithKeysOnly()), func(r *etcdRange) {
				for _, kv := range r.kvs {
					name := string(kv.Key[len(cp):])
					if p == "/" {
						so.kids[p] = append(so.kids[p], "/"+name)
					} else {
						so.kids[p] = append(so.kids[p], p+"/"+name)
					}
				}
			}})
		default:
			addNode(p)
		}
	}
	for _, q := range seqParents {
		if seen["seq:"+q] {
			continue
		}
		seen["seq:"+q] = true
		rs = append(rs, read{clientv3.OpGet(e.counterKey(q)), func(r *etcdRange) { so.counters[q] = counterOf(r) }})
	}
	for start := 0; start < len(rs); start += etcdReadBatch {
		batch := rs[start:min(start+etcdReadBatch, len(rs))]
		ops := make([]clientv3.Op, len(batch))
		for i, r := range batch {
			ops[i] = r.op
		}
		got, _, err := e.readTxn(ctx, ops...)
		if err != nil {
			return nil, err
		}
		for i, r := range batch {
			r.into(got[i])
		}
	}
	// Sequential names are known only now: read the ones a create would
	// take, so that a node in the way is found.
	var extra []read
	for _, op := range ops {
		if o, ok := op.(CreateOp); ok && (o.Mode == EphemeralSequential || o.Mode == PersistentSequential) {
			q := parentOf(o.Path)
			c := so.counters[q]
			for n := c.next; n < c.next+int64(len(ops)); n++ {
				p := o.Path + fmt.Sprintf("%010d", n)
				if seen[p] {
					continue
				}
				seen[p] = true
				extra = append(extra, read{clientv3.OpGet(e.nodeKey(p), clientv3.WithKeysOnly()), func(r *etcdRange) {
					if len(r.kvs) > 0 {
						so.nodes[p] = r.kvs[0]
					}
				}})
			}
		}
	}
	for start := 0; start < len(extra); start += etcdReadBatch {
		batch := extra[start:min(start+etcdReadBatch, len(extra))]
		ops := make([]clientv3.Op, len(batch))
		for i, r := range batch {
			ops[i] = r.op
		}
		got, _, err := e.readTxn(ctx, ops...)
		if err != nil {
			return nil, err
		}
		for i, r := range batch {
			r.into(got[i])
		}
	}
	return so, nil
}
