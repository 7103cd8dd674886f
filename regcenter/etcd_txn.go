package regcenter

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// How a list of operations becomes one etcd transaction (see etcd.go for
// the key layout). Every write reads first, in one read transaction, the
// keys of the nodes it touches (and their parents' children markers, and
// the children of nodes it deletes); then it replays the operations in
// order on that state, as ZooKeeper applies a multi, and either names the
// first operation that fails (a *MultiError with its sentinel) or sends
// the result as one transaction whose compares hold only if nothing it
// read has changed since. If something has, it starts over.

// errEphemeralParent refuses a child of an ephemeral node, as ZooKeeper
// does.
var errEphemeralParent = errors.New("regcenter: ephemeral nodes may not have children")

// header is the metadata stored in front of a node's data.
type header struct {
	version      int32
	ctime, mtime int64 // ms since the epoch, the writer's clock
	// czxid is the node's creation revision when it differs from the
	// key's: czxidMod when the write that set it (re)created the node over
	// a key that existed, else 0 (the key's CreateRevision).
	czxid int64
}

const (
	headerMagic = 0xE7
	headerLen   = 1 + 4 + 8 + 8 + 8
	czxidMod    = -1
)

func (h header) encode(data []byte) string {
	b := make([]byte, headerLen+len(data))
	b[0] = headerMagic
	binary.BigEndian.PutUint32(b[1:], uint32(h.version))
	binary.BigEndian.PutUint64(b[5:], uint64(h.ctime))
	binary.BigEndian.PutUint64(b[13:], uint64(h.mtime))
	binary.BigEndian.PutUint64(b[21:], uint64(h.czxid))
	copy(b[headerLen:], data)
	return string(b)
}

// decodeNode splits a node key's value into header and data. A value
// without a header (written by something else) reads as data at the key's
// own version.
func decodeNode(kv *mvccpb.KeyValue) (header, []byte) {
	v := kv.Value
	if len(v) < headerLen || v[0] != headerMagic {
		return header{version: int32(kv.Version - 1)}, v
	}
	return header{
		version: int32(binary.BigEndian.Uint32(v[1:])),
		ctime:   int64(binary.BigEndian.Uint64(v[5:])),
		mtime:   int64(binary.BigEndian.Uint64(v[13:])),
		czxid:   int64(binary.BigEndian.Uint64(v[21:])),
	}, v[headerLen:]
}

// czxidOf is the node's creation revision.
func czxidOf(kv *mvccpb.KeyValue, h header) int64 {
	switch h.czxid {
	case 0:
		return kv.CreateRevision
	case czxidMod:
		return kv.ModRevision
	}
	return h.czxid
}

func statFromKV(kv *mvccpb.KeyValue, marker *mvccpb.KeyValue, kids int64) ([]byte, Stat) {
	h, data := decodeNode(kv)
	st := Stat{
		Version:        h.version,
		EphemeralOwner: kv.Lease,
		Czxid:          czxidOf(kv, h),
		Mzxid:          kv.ModRevision,
		NumChildren:    int32(kids),
		DataLength:     int32(len(data)),
	}
	if h.ctime != 0 {
		st.Ctime, st.Mtime = time.UnixMilli(h.ctime), time.UnixMilli(h.mtime)
	}
	if marker != nil {
		st.CVersion = cversionOf(marker)
	}
	return data, st
}

func cversionOf(marker *mvccpb.KeyValue) int32 {
	if marker == nil {
		return 0
	}
	n, _ := strconv.ParseInt(string(marker.Value), 10, 32) // written only as a decimal
	return int32(n)
}

// simNode is a node's state in the overlay.
type simNode struct {
	pre    *mvccpb.KeyValue // as read before the transaction; nil: absent
	exists bool
	h      header
	data   []byte
	lease  int64
	dirty  bool // the node key must be written
	fresh  bool // (re)created by this transaction
	cver   int32
	cdirty bool // the marker must be written
	kids   map[string]bool
}

// state is what was read before the transaction.
type state struct {
	nodes   map[string]*mvccpb.KeyValue // path -> node key (nil: absent)
	markers map[string]*mvccpb.KeyValue // path -> marker (nil: absent)
	kids    map[string][]string         // path -> children's paths
	rev     int64
}

type planner struct {
	e     *Etcd
	st    *state
	nodes map[string]*simNode
	order []string
	now   int64
	lease int64
	// seqNames are the sequential nodes created: their keys were not read.
	seqNames []string
	created  []string
}

func (e *Etcd) newPlanner(st *state) *planner {
	e.mu.Lock()
	lease := int64(e.lease)
	e.mu.Unlock()
	return &planner{e: e, st: st, nodes: map[string]*simNode{}, now: time.Now().UnixMilli(), lease: lease}
}

// node returns p's overlay entry, made from the state read.
func (pl *planner) node(p string) *simNode {
	if n := pl.nodes[p]; n != nil {
		return n
	}
	n := &simNode{pre: pl.st.nodes[p], kids: map[string]bool{}}
	if n.pre != nil {
		n.exists = true
		n.h, n.data = decodeNode(n.pre)
		n.h.czxid = czxidOf(n.pre, n.h)
		n.lease = n.pre.Lease
	}
	n.cver = cversionOf(pl.st.markers[p])
	for _, k := range pl.st.kids[p] {
		n.kids[k] = true
	}
	pl.nodes[p] = n
	pl.order = append(pl.order, p)
	return n
}

func (pl *planner) step(op Op) error {
	switch o := op.(type) {
	case CreateOp:
		return pl.create(o)
	case SetOp:
		n := pl.node(o.Path)
		if !n.exists {
			return ErrNoNode
		}
		if o.Version >= 0 && n.h.version != o.Version {
			return ErrBadVersion
		}
		n.h.version++
		n.h.mtime = pl.now
		n.data, n.dirty = o.Data, true
		return nil
	case CheckOp:
		n := pl.node(o.Path)
		if !n.exists {
			return ErrNoNode
		}
		if o.Version >= 0 && n.h.version != o.Version {
			return ErrBadVersion
		}
		return nil
	case DeleteOp:
		n := pl.node(o.Path)
		if !n.exists {
			return ErrNoNode
		}
		if o.Version >= 0 && n.h.version != o.Version {
			return ErrBadVersion
		}
		for k := range n.kids {
			// A child read before the transaction and not touched since
			// exists; a touched one is as the overlay says.
			if c := pl.nodes[k]; c == nil || c.exists {
				return ErrNotEmpty
			}
		}
		n.exists, n.dirty, n.fresh = false, false, false
		if o.Path != "/" {
			q := pl.node(parentOf(o.Path))
			q.cver++
			q.cdirty = true
			delete(q.kids, o.Path)
		}
		return nil
	}
	return fmt.Errorf("regcenter: unknown op %T", op)
}

func (pl *planner) create(o CreateOp) error {
	p := o.Path
	if p == "/" {
		return ErrNodeExists
	}
	q := pl.node(parentOf(p))
	if !q.exists {
		return ErrNoNode
	}
	if q.lease != 0 {
		return errEphemeralParent
	}
	if o.Mode == EphemeralSequential || o.Mode == PersistentSequential {
		// ZooKeeper's sequence number is the parent's cversion.
		p += fmt.Sprintf("%010d", q.cver)
		if _, read := pl.st.nodes[p]; !read {
			pl.seqNames = append(pl.seqNames, p)
		}
	}
	n := pl.node(p)
	if n.exists {
		return ErrNodeExists
	}
	var lease int64
	if o.Mode == Ephemeral || o.Mode == EphemeralSequential {
		lease = pl.lease
	}
	n.exists, n.dirty, n.fresh = true, true, true
	n.h = header{ctime: pl.now, mtime: pl.now}
	if n.pre != nil {
		// Created again over the key it had: the key's revisions are the
		// old node's, so the creation revision is this write's.
		n.h.czxid = czxidMod
	}
	n.data, n.lease = o.Data, lease
	n.cver, n.cdirty = 0, pl.st.markers[p] != nil
	n.kids = map[string]bool{}
	q.cver++
	q.cdirty = true
	q.kids[p] = true
	pl.created = append(pl.created, p)
	return nil
}

type plan struct {
	cmps    []clientv3.Cmp
	then    []clientv3.Op
	created []string
	size    int
}

// finish turns the overlay into the transaction: compares that what was
// read is unchanged, and the writes.
func (pl *planner) finish() *plan {
	e := pl.e
	out := &plan{created: pl.created}
	cmp := func(c clientv3.Cmp) {
		out.cmps = append(out.cmps, c)
		g := c.GetCompare()
		out.size += len(g.Key) + len(g.RangeEnd) + 16
	}
	add := func(op clientv3.Op, key string, value int) {
		out.then = append(out.then, op)
		out.size += len(key) + value + 16
	}
	unchanged := func(k string, kv *mvccpb.KeyValue) {
		var rev int64
		if kv != nil {
			rev = kv.ModRevision
		}
		cmp(clientv3.Compare(clientv3.ModRevision(k), "=", rev))
	}
	for _, p := range pl.order {
		n := pl.nodes[p]
		nk, mk := e.nodeKey(p), e.markerKey(p)
		if _, read := pl.st.nodes[p]; read {
			unchanged(nk, n.pre)
		} else {
			cmp(clientv3.Compare(clientv3.CreateRevision(nk), "=", 0))
		}
		if _, read := pl.st.markers[p]; read {
			unchanged(mk, pl.st.markers[p])
		}
		if kids, read := pl.st.kids[p]; read {
			pl.noOtherChildren(p, kids, cmp)
		}
		switch {
		case n.exists && n.dirty:
			v := n.h.encode(n.data)
			switch {
			case n.fresh && n.lease != 0:
				add(clientv3.OpPut(nk, v, clientv3.WithLease(clientv3.LeaseID(n.lease))), nk, len(v))
			case n.fresh:
				add(clientv3.OpPut(nk, v), nk, len(v))
			default:
				add(clientv3.OpPut(nk, v, clientv3.WithIgnoreLease()), nk, len(v))
			}
		case !n.exists && n.pre != nil:
			add(clientv3.OpDelete(nk), nk, 0)
		}
		switch {
		case !n.exists && pl.st.markers[p] != nil:
			add(clientv3.OpDelete(mk), mk, 0)
		case n.exists && n.cdirty:
			add(clientv3.OpPut(mk, strconv.Itoa(int(n.cver))), mk, 10)
		}
	}
	return out
}

// noOtherChildren compares p's children range, between the keys of the
// children that were read, with "no key here": no child appeared since
// the read.
func (pl *planner) noOtherChildren(p string, kids []string, cmp func(clientv3.Cmp)) {
	start := pl.e.childPrefix(p)
	end := clientv3.GetPrefixRangeEnd(start)
	keys := make([]string, 0, len(kids))
	for _, k := range kids {
		keys = append(keys, pl.e.nodeKey(k))
	}
	sort.Strings(keys)
	for _, k := range append(keys, end) {
		if start < k {
			cmp(clientv3.Compare(clientv3.CreateRevision(start), "=", 0).WithRange(k))
		}
		start = k + "\x00"
	}
}

// txnResult is what a successful transaction gives back.
type txnResult struct {
	created []string     // the paths created, in op order
	reads   []*etcdRange // the answers to the extra reads
}

// txn applies ops (clean paths) as one etcd transaction, then runs reads
// inside it. A failure is a *MultiError naming the first op that fails.
func (e *Etcd) txn(ctx context.Context, counter *atomic.Int64, ops []Op, reads []clientv3.Op) (txnResult, error) {
	var extra []string // sequential names to read on the next attempt
	for attempt := 0; ; attempt++ {
		st, err := e.readState(ctx, ops, extra)
		if err != nil {
			return txnResult{}, err
		}
		pl := e.newPlanner(st)
		for i, op := range ops {
			if err := pl.step(op); err != nil {
				return txnResult{}, &MultiError{Index: i, Op: op, Err: err}
			}
		}
		p := pl.finish()
		if p.size > etcdMaxRequestBytes-etcdRequestSlack {
			return txnResult{}, fmt.Errorf("%w: transaction of %d ops is %d bytes on etcd, over its request limit of %d",
				ErrTooLarge, len(ops), p.size, etcdMaxRequestBytes-etcdRequestSlack)
		}
		var resp *clientv3.TxnResponse
		err = e.do(ctx, counter, func(ctx context.Context) error {
			var err error
			resp, err = e.cli.Txn(ctx).If(p.cmps...).Then(append(p.then, reads...)...).Commit()
			return err
		})
		if err != nil {
			return txnResult{}, err
		}
		if resp.Succeeded {
			return txnResult{created: p.created, reads: ranges(resp)}, nil
		}
		// Something read changed before the transaction: read again.
		if attempt >= etcdConflictRetries {
			return txnResult{}, fmt.Errorf("%w: the transaction kept conflicting with concurrent writes", ErrConnectionLoss)
		}
		extra = append(extra[:0], pl.seqNames...)
		if err := e.backoff(ctx, attempt); err != nil {
			return txnResult{}, err
		}
	}
}

// backoff waits a little, longer after each conflict, so that concurrent
// writers of one node do not keep failing each other.
func (e *Etcd) backoff(ctx context.Context, attempt int) error {
	d := min(time.Duration(attempt+1)*2*time.Millisecond, e.cfg.MaxSleep, 50*time.Millisecond)
	d = time.Duration(rand.Int64N(int64(d)) + 1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-e.done:
		return ErrClosed
	case <-t.C:
		return nil
	}
}

// readState reads what the ops need: every node they name with its
// children marker, the parents of creates with theirs, and the children
// of deleted nodes. Reads are batched below etcd's default limit of
// operations per transaction; the compares catch a change between batches.
func (e *Etcd) readState(ctx context.Context, ops []Op, extra []string) (*state, error) {
	st := &state{nodes: map[string]*mvccpb.KeyValue{}, markers: map[string]*mvccpb.KeyValue{}, kids: map[string][]string{}}
	type read struct {
		op   clientv3.Op
		into func(*etcdRange)
	}
	var rs []read
	addNode := func(p string) {
		if _, ok := st.nodes[p]; ok {
			return
		}
		st.nodes[p], st.markers[p] = nil, nil
		rs = append(rs,
			read{clientv3.OpGet(e.nodeKey(p)), func(r *etcdRange) {
				if len(r.kvs) > 0 {
					st.nodes[p] = r.kvs[0]
				}
			}},
			read{clientv3.OpGet(e.markerKey(p)), func(r *etcdRange) {
				if len(r.kvs) > 0 {
					st.markers[p] = r.kvs[0]
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
			if p != "/" {
				addNode(parentOf(p))
			}
			if _, ok := st.kids[p]; ok {
				continue
			}
			st.kids[p] = []string{}
			cp := e.childPrefix(p)
			rs = append(rs, read{clientv3.OpGet(cp, clientv3.WithPrefix(), clientv3.WithKeysOnly()), func(r *etcdRange) {
				for _, kv := range r.kvs {
					name := string(kv.Key[len(cp):])
					if p == "/" {
						st.kids[p] = append(st.kids[p], "/"+name)
					} else {
						st.kids[p] = append(st.kids[p], p+"/"+name)
					}
				}
			}})
		default:
			addNode(p)
		}
	}
	for _, p := range extra {
		addNode(p)
	}
	for start := 0; start < len(rs); start += etcdReadBatch {
		batch := rs[start:min(start+etcdReadBatch, len(rs))]
		ops := make([]clientv3.Op, len(batch))
		for i, r := range batch {
			ops[i] = r.op
		}
		got, rev, err := e.readTxn(ctx, ops...)
		if err != nil {
			return nil, err
		}
		st.rev = rev
		for i, r := range batch {
			r.into(got[i])
		}
	}
	return st, nil
}
