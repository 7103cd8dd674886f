package etcd

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/internal/backend"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// How a list of operations becomes one etcd transaction (see etcd.go for
// the key layout).
//
// The direct path: the operations' own preconditions are compares the
// server checks, so most writes are one round trip. A node's ZooKeeper
// version is its key's etcd version less one (etcd's version counts the
// puts since the key was created, and a Set is one put); "exists" is
// create_revision != 0 and "does not exist" create_revision == 0; "has no
// children" is create_revision == 0 over the range of its children's keys;
// a parent that may have children is a node key without a lease. The
// parent's cversion is its meta key's etcd version (plus a base kept in the
// meta value), so a child's create or delete bumps it with a put that keeps
// the value (ignore_value): nothing needs reading first. The compares are
// sufficient conditions: a node created over its own key in one transaction
// (its version then has a base, see header) or anything not in this
// layout fails them, and so does every operation that would fail.
//
// When the direct transaction's compares fail, its else branch has read, in
// the same round trip, the keys the replay needs: the replay below names the
// operation that fails, or, when every operation would succeed (a node in
// the rarer forms), sends the exact transaction. Operation lists the direct
// path cannot express go to the replay at once: sequential creates (their
// name is the parent's cversion), and lists writing or checking one key
// twice (a node twice, or two children of one parent, both counted in its
// meta key: etcd allows one put per key and transaction, and ZooKeeper
// counts every child). A node's set beside its child's create or delete
// writes the node key and the meta key, one each, and goes directly.
//
// The replay: read the keys of the nodes the operations touch (and their
// meta keys, and the children of nodes they delete), replay the operations
// in order on that state, as ZooKeeper applies a multi, and either name the
// first operation that fails (a *MultiError with its sentinel) or send the
// result as one transaction whose compares hold only if nothing read has
// changed since. If something has, it starts over.
//
// The first replay guesses: a node whose first operation in the list is
// its own (non-sequential) create is taken to be absent, unread, and the
// transaction compares that its node and meta keys do not exist. A list
// that makes new trees (a scheduler registering jobs, a thousand creates
// in one transaction) then reads only the parents it creates under, not
// two keys per node. When the guess is wrong the compares fail, or the
// replay fails an operation it may have judged on the guess, and the
// replay starts over on everything read, which names the operation that
// fails as ZooKeeper would.

// errEphemeralParent refuses a child of an ephemeral node, as ZooKeeper
// does.
var errEphemeralParent = errors.New("regcenter: ephemeral nodes may not have children")

// header is the metadata stored in front of a node's data. Its plain form
// is the magic byte and the mtime; the special form adds vbase and czxid,
// for a node created over its own key in one transaction (a Multi that
// deletes and creates it again), whose key keeps counting versions and
// keeps its create revision.
type header struct {
	mtime int64 // ms since the epoch, the writer's clock
	// vbase is how many puts the key had before this node was created
	// over it: the ZooKeeper version is the key's etcd version - 1 - vbase.
	vbase int64
	// czxid is the node's creation revision when it differs from the
	// key's: czxidMod when the write that set it (re)created the node over
	// a key that existed, else 0 (the key's CreateRevision).
	czxid int64
	// ctime is the creation time an earlier layout kept in the value
	// (legacy form only; the meta key holds it now).
	ctime int64
}

const (
	headerPlain   = 0xE8
	headerSpecial = 0xE9
	headerLegacy  = 0xE7 // version, ctime, mtime, czxid: the earlier layout
	plainLen      = 1 + 8
	specialLen    = 1 + 8 + 8 + 8
	legacyLen     = 1 + 4 + 8 + 8 + 8
	czxidMod      = -1

	// The meta value: the magic byte, ctime and cbase (cversion is
	// cbase + the meta key's etcd version - 1).
	metaMagic = 0xEC
	metaLen   = 1 + 8 + 8
)

// Bounds of the plain header in a value compare: a value v is in the plain
// form exactly when plainLow < v < plainHigh (its first byte is the magic
// and more follows). A meta value is in this layout's form when v > metaLow.
const (
	plainLow  = "\xE8"
	plainHigh = "\xE9"
	metaLow   = "\xEB"
)

func (h header) encode(data []byte) string {
	if h.vbase == 0 && h.czxid == 0 {
		b := make([]byte, plainLen+len(data))
		b[0] = headerPlain
		binary.BigEndian.PutUint64(b[1:], uint64(h.mtime))
		copy(b[plainLen:], data)
		return string(b)
	}
	b := make([]byte, specialLen+len(data))
	b[0] = headerSpecial
	binary.BigEndian.PutUint64(b[1:], uint64(h.mtime))
	binary.BigEndian.PutUint64(b[9:], uint64(h.vbase))
	binary.BigEndian.PutUint64(b[17:], uint64(h.czxid))
	copy(b[specialLen:], data)
	return string(b)
}

// maxStoredMillis is the latest time a header may carry: the end of the
// year 9999, in ms since the epoch. A time outside [0, maxStoredMillis]
// was not written by this layout.
const maxStoredMillis = 253402300799999

func plausibleMillis(ms int64) bool { return ms >= 0 && ms <= maxStoredMillis }

// decodeNode splits a node key's value into header, ZooKeeper version and
// data. It is total: any value decodes, in bounded work and without
// allocating. A header is trusted only when its fields agree with the key
// (its versions, its revisions, a plausible time): a value without one,
// or with one that does not fit the key (something else wrote it, a raw
// client's put), reads as headerless data at the key's own version, so
// the node exists and changed, as for any write.
func decodeNode(kv *mvccpb.KeyValue) (header, int32, []byte) {
	if h, version, data, ok := decodeHeader(kv); ok {
		return h, version, data
	}
	return header{}, clampVersion(kv.Version - 1), kv.Value
}

// decodeHeader reads the header of kv's value when it has one of this
// layout's forms and is consistent with the key; ok is false otherwise.
//
// What the writers (finish, directPlan, createRoot) store, and so what is
// checked: a time from 1970 to 9999, and a ZooKeeper version from 0 to
// MaxInt32. A plain header's ZooKeeper version is the key's etcd version
// less one. A special header is written only when vbase or czxid is not 0:
// vbase is the key's puts before the node's creation less the Sets that
// shared a transaction with another write of the node (so it may be
// negative), and it is at most the key's version less one; czxid is
// czxidMod on a write that creates the node over its key, and later that
// write's revision, from the key's creation to its latest write. The
// earlier layout's header holds the version itself and the same czxid
// forms.
func decodeHeader(kv *mvccpb.KeyValue) (h header, version int32, data []byte, ok bool) {
	v := kv.Value
	if len(v) == 0 || kv.Version < 1 {
		return header{}, 0, nil, false
	}
	switch v[0] {
	case headerPlain:
		if len(v) < plainLen {
			return header{}, 0, nil, false
		}
		h.mtime = int64(binary.BigEndian.Uint64(v[1:]))
		if !plausibleMillis(h.mtime) {
			return header{}, 0, nil, false
		}
		return h, clampVersion(kv.Version - 1), v[plainLen:], true
	case headerSpecial:
		if len(v) < specialLen {
			return header{}, 0, nil, false
		}
		h = header{
			mtime: int64(binary.BigEndian.Uint64(v[1:])),
			vbase: int64(binary.BigEndian.Uint64(v[9:])),
			czxid: int64(binary.BigEndian.Uint64(v[17:])),
		}
		// The version, kv.Version-1-vbase, from 0 to MaxInt32 (compared
		// on vbase, which cannot overflow).
		if !plausibleMillis(h.mtime) || (h.vbase == 0 && h.czxid == 0) ||
			h.vbase > kv.Version-1 || h.vbase < kv.Version-1-math.MaxInt32 || !czxidFits(kv, h.czxid) {
			return header{}, 0, nil, false
		}
		return h, int32(kv.Version - 1 - h.vbase), v[specialLen:], true
	case headerLegacy:
		if len(v) < legacyLen {
			return header{}, 0, nil, false
		}
		version := int64(int32(binary.BigEndian.Uint32(v[1:])))
		h = header{
			ctime: int64(binary.BigEndian.Uint64(v[5:])),
			mtime: int64(binary.BigEndian.Uint64(v[13:])),
			czxid: int64(binary.BigEndian.Uint64(v[21:])),
			vbase: kv.Version - 1 - version,
		}
		if !plausibleMillis(h.ctime) || !plausibleMillis(h.mtime) || version < 0 || !czxidFits(kv, h.czxid) {
			return header{}, 0, nil, false
		}
		return h, int32(version), v[legacyLen:], true
	}
	return header{}, 0, nil, false
}

// czxidFits reports whether a header's czxid agrees with the key: 0 (the
// key's creation), czxidMod (this write's), or a revision from the key's
// creation to its latest write.
func czxidFits(kv *mvccpb.KeyValue, czxid int64) bool {
	if czxid == 0 || czxid == czxidMod {
		return true
	}
	return czxid > 0 && czxid >= kv.CreateRevision && czxid <= kv.ModRevision
}

// clampVersion is an etcd count as a ZooKeeper version: within [0,
// MaxInt32], as ZooKeeper's own are.
func clampVersion(v int64) int32 {
	return int32(min(max(v, 0), math.MaxInt32))
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

// encodeMeta is a meta value: ctime, and the base that makes the key's
// etcd version once put (version) count as cversion.
func encodeMeta(ctime int64, cversion int32, version int64) string {
	b := make([]byte, metaLen)
	b[0] = metaMagic
	binary.BigEndian.PutUint64(b[1:], uint64(ctime))
	binary.BigEndian.PutUint64(b[9:], uint64(int64(cversion)-(version-1)))
	return string(b)
}

// decodeMeta reads a meta key (nil: absent, cversion 0). An earlier
// layout's marker holds the cversion in decimal and no ctime. It is total
// and bounded like decodeNode: a value in neither form, or whose ctime or
// cversion is out of range, reads as no ctime and a cversion of the
// key's own count of puts (each child's create and delete puts it once).
func decodeMeta(kv *mvccpb.KeyValue) (ctime int64, cversion int32) {
	if kv == nil {
		return 0, 0
	}
	v := kv.Value
	if len(v) == metaLen && v[0] == metaMagic {
		ctime := int64(binary.BigEndian.Uint64(v[1:]))
		cbase := int64(binary.BigEndian.Uint64(v[9:]))
		// cbase + version - 1, without overflow: both parts are bounded
		// before they are added.
		if plausibleMillis(ctime) && cbase >= -kv.Version && cbase <= math.MaxInt32 && kv.Version >= 1 {
			if c := cbase + kv.Version - 1; c >= 0 && c <= math.MaxInt32 {
				return ctime, int32(c)
			}
		}
	} else if n, ok := decimal(v); ok {
		// The earlier layout wrote it only as a decimal.
		return 0, n
	}
	return 0, clampVersion(kv.Version - 1)
}

// decimal reads v as a non-negative decimal of at most ten digits that
// fits an int32.
func decimal(v []byte) (int32, bool) {
	if len(v) == 0 || len(v) > 10 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if n > math.MaxInt32 {
		return 0, false
	}
	return int32(n), true
}

func statFromKV(kv *mvccpb.KeyValue, meta *mvccpb.KeyValue, kids int64) ([]byte, regcenter.Stat) {
	h, version, data := decodeNode(kv)
	ctime, cversion := decodeMeta(meta)
	if ctime == 0 {
		ctime = h.ctime
	}
	st := regcenter.Stat{
		Version:        version,
		CVersion:       cversion,
		EphemeralOwner: kv.Lease,
		Czxid:          czxidOf(kv, h),
		Mzxid:          kv.ModRevision,
		NumChildren:    int32(kids),
		DataLength:     int32(len(data)),
	}
	if ctime != 0 {
		st.Ctime = time.UnixMilli(ctime)
	}
	if h.mtime != 0 {
		st.Mtime = time.UnixMilli(h.mtime)
	}
	return data, st
}

// simNode is a node's state in the overlay.
type simNode struct {
	pre     *mvccpb.KeyValue // the node key as read before the transaction; nil: absent
	meta    *mvccpb.KeyValue // its meta key as read; nil: absent
	exists  bool
	version int32
	czxid   int64 // the creation revision; czxidMod: created here over its key
	mtime   int64
	ctime   int64
	data    []byte
	lease   int64
	dirty   bool // the node key must be written
	fresh   bool // (re)created by this transaction
	cver    int32
	mdirty  bool // the meta key must be written
	kids    map[string]bool
}

// state is what was read before the transaction.
type state struct {
	nodes map[string]*mvccpb.KeyValue // path -> node key (nil: absent)
	metas map[string]*mvccpb.KeyValue // path -> meta key (nil: absent)
	kids  map[string][]string         // path -> children's paths
	rev   int64
	// guessed: nodes were taken to be absent without being read (see
	// stateReads).
	guessed bool
}

type planner struct {
	e     *Center
	st    *state
	nodes map[string]*simNode
	order []string
	now   int64
	lease int64
	// seqNames are the sequential nodes created: their keys were not read.
	seqNames []string
	created  []string
}

// currentLease is the lease ephemeral nodes are created on.
func (e *Center) currentLease() int64 { return e.sessions.Current().ID() }

func (e *Center) newPlanner(st *state, lease, now int64) *planner {
	return &planner{e: e, st: st, nodes: map[string]*simNode{}, now: now, lease: lease}
}

// node returns p's overlay entry, made from the state read.
func (pl *planner) node(p string) *simNode {
	if n := pl.nodes[p]; n != nil {
		return n
	}
	n := &simNode{pre: pl.st.nodes[p], meta: pl.st.metas[p], kids: map[string]bool{}}
	var legacyCtime int64
	if n.pre != nil {
		var h header
		n.exists = true
		h, n.version, n.data = decodeNode(n.pre)
		n.czxid = czxidOf(n.pre, h)
		n.mtime, legacyCtime = h.mtime, h.ctime
		n.lease = n.pre.Lease
	}
	n.ctime, n.cver = decodeMeta(n.meta)
	if n.ctime == 0 {
		n.ctime = legacyCtime
	}
	for _, k := range pl.st.kids[p] {
		n.kids[k] = true
	}
	pl.nodes[p] = n
	pl.order = append(pl.order, p)
	return n
}

func (pl *planner) step(op regcenter.Op) error {
	switch o := op.(type) {
	case regcenter.CreateOp:
		return pl.create(o)
	case regcenter.SetOp:
		n := pl.node(o.Path)
		if !n.exists {
			return regcenter.ErrNoNode
		}
		if o.Version >= 0 && n.version != o.Version {
			return regcenter.ErrBadVersion
		}
		n.version++
		n.mtime = pl.now
		n.data, n.dirty = o.Data, true
		return nil
	case regcenter.CheckOp:
		n := pl.node(o.Path)
		if !n.exists {
			return regcenter.ErrNoNode
		}
		if o.Version >= 0 && n.version != o.Version {
			return regcenter.ErrBadVersion
		}
		return nil
	case regcenter.DeleteOp:
		n := pl.node(o.Path)
		if !n.exists {
			return regcenter.ErrNoNode
		}
		if o.Version >= 0 && n.version != o.Version {
			return regcenter.ErrBadVersion
		}
		for k := range n.kids {
			// A child read before the transaction and not touched since
			// exists; a touched one is as the overlay says.
			if c := pl.nodes[k]; c == nil || c.exists {
				return regcenter.ErrNotEmpty
			}
		}
		n.exists, n.dirty, n.fresh, n.mdirty = false, false, false, false
		if o.Path != "/" {
			q := pl.node(parentOf(o.Path))
			q.cver++
			q.mdirty = true
			delete(q.kids, o.Path)
		}
		return nil
	}
	return fmt.Errorf("regcenter: unknown op %T", op)
}

func (pl *planner) create(o regcenter.CreateOp) error {
	p := o.Path
	if p == "/" {
		return regcenter.ErrNodeExists
	}
	q := pl.node(parentOf(p))
	if !q.exists {
		return regcenter.ErrNoNode
	}
	if q.lease != 0 {
		return errEphemeralParent
	}
	if o.Mode == regcenter.EphemeralSequential || o.Mode == regcenter.PersistentSequential {
		// ZooKeeper's sequence number is the parent's cversion.
		p += fmt.Sprintf("%010d", q.cver)
		if _, read := pl.st.nodes[p]; !read {
			pl.seqNames = append(pl.seqNames, p)
		}
	}
	n := pl.node(p)
	if n.exists {
		return regcenter.ErrNodeExists
	}
	var lease int64
	if o.Mode == regcenter.Ephemeral || o.Mode == regcenter.EphemeralSequential {
		lease = pl.lease
	}
	n.exists, n.dirty, n.fresh, n.mdirty = true, true, true, true
	n.version, n.ctime, n.mtime = 0, pl.now, pl.now
	n.czxid = 0
	if n.pre != nil {
		// Created again over the key it had: the key's revisions are the
		// old node's, so the creation revision is this write's.
		n.czxid = czxidMod
	}
	n.data, n.lease = o.Data, lease
	n.cver = 0
	n.kids = map[string]bool{}
	q.cver++
	q.mdirty = true
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

func (p *plan) cmp(c clientv3.Cmp) {
	p.cmps = append(p.cmps, c)
	g := c.GetCompare()
	p.size += len(g.Key) + len(g.RangeEnd) + len(g.GetValue()) + 16
}

func (p *plan) add(op clientv3.Op, key string, value int) {
	p.then = append(p.then, op)
	p.size += len(key) + value + 16
}

// leaseOpts puts a key on lease (none: 0, which detaches a lease the key
// had).
func leaseOpts(lease int64) []clientv3.OpOption {
	if lease == 0 {
		return nil
	}
	return []clientv3.OpOption{clientv3.WithLease(clientv3.LeaseID(lease))}
}

// finish turns the overlay into the transaction: compares that what was
// read is unchanged, and the writes.
func (pl *planner) finish() *plan {
	e := pl.e
	// Each node has at most two compares and two writes, besides its
	// children's ranges: clientv3.Op is a large struct, and growing the
	// list of a thousand-node transaction by appends copied it over and
	// over (a fifth of what registering jobs allocated).
	out := &plan{
		created: pl.created,
		cmps:    make([]clientv3.Cmp, 0, 2*len(pl.order)+len(pl.st.kids)),
		then:    make([]clientv3.Op, 0, 2*len(pl.order)),
	}
	unchanged := func(k string, kv *mvccpb.KeyValue) {
		var rev int64
		if kv != nil {
			rev = kv.ModRevision
		}
		out.cmp(clientv3.Compare(clientv3.ModRevision(k), "=", rev))
	}
	for _, p := range pl.order {
		n := pl.nodes[p]
		nk, mk := e.nodeKey(p), e.metaKey(p)
		if _, read := pl.st.nodes[p]; read {
			unchanged(nk, n.pre)
		} else {
			out.cmp(clientv3.Compare(clientv3.CreateRevision(nk), "=", 0))
		}
		if _, read := pl.st.metas[p]; read {
			unchanged(mk, n.meta)
		} else {
			out.cmp(clientv3.Compare(clientv3.CreateRevision(mk), "=", 0))
		}
		if kids, read := pl.st.kids[p]; read {
			pl.noOtherChildren(p, kids, out.cmp)
		}
		if n.exists && n.dirty && n.meta == nil {
			n.mdirty = true // a node of an earlier layout gets its meta key
		}
		switch {
		case n.exists && n.dirty:
			// The key's etcd version once put, and the header that makes
			// it read as the node's ZooKeeper version and creation.
			version := int64(1)
			if n.pre != nil {
				version = n.pre.Version + 1
			}
			h := header{mtime: n.mtime, vbase: version - 1 - int64(n.version)}
			switch {
			case n.czxid == czxidMod:
				h.czxid = czxidMod
			case n.pre != nil && n.czxid != n.pre.CreateRevision:
				h.czxid = n.czxid
			}
			v := h.encode(n.data)
			if n.fresh {
				out.add(clientv3.OpPut(nk, v, leaseOpts(n.lease)...), nk, len(v))
			} else {
				out.add(clientv3.OpPut(nk, v, clientv3.WithIgnoreLease()), nk, len(v))
			}
		case !n.exists && n.pre != nil:
			out.add(clientv3.OpDelete(nk), nk, 0)
		}
		switch {
		case !n.exists && n.meta != nil:
			out.add(clientv3.OpDelete(mk), mk, 0)
		case n.exists && n.mdirty:
			version := int64(1)
			if n.meta != nil {
				version = n.meta.Version + 1
			}
			out.add(clientv3.OpPut(mk, encodeMeta(n.ctime, n.cver, version), leaseOpts(n.lease)...), mk, metaLen)
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

// directPlan builds ops as one transaction whose compares are the ops' own
// preconditions (see the top of this file), or reports false when the
// list needs the replay: a sequential create, an op on the root, or a key
// that two ops write or check — a node's key (its create, set, delete or
// check), or its meta key (its create or delete, or a child's, which
// counts in its cversion). A set of a node and a create or delete of its
// child touch different keys: a reshard's flag (a child created) and the
// move of its epoch (the parent set) go together directly.
func (e *Center) directPlan(ops []regcenter.Op, lease, now int64) (*plan, bool) {
	used := make(map[string]bool, 3*len(ops))
	use := func(nodes []string, metas ...string) bool {
		for _, p := range nodes {
			if used[p] {
				return false
			}
			used[p] = true
		}
		for _, p := range metas {
			if used["\x00meta"+p] {
				return false
			}
			used["\x00meta"+p] = true
		}
		return true
	}
	// At most five compares and three writes an op (see finish).
	out := &plan{cmps: make([]clientv3.Cmp, 0, 5*len(ops)), then: make([]clientv3.Op, 0, 3*len(ops))}
	// version compares the node's ZooKeeper version (v >= 0), or only its
	// existence (v < 0, any version; plain: and its plain form), and that
	// the node is one this client could have known when it sent the
	// transaction: created at or before the highest revision seen. A
	// transaction whose answer was lost may still be applied later (a
	// member that stalled with it), after the node was deleted and made
	// again — by another instance, or by this one after its retry went
	// through; without this compare it would act on the newer node: a
	// delete of a running mark would remove a mark another run holds.
	seen := e.seen.Load()
	version := func(nk string, v int32, plain bool) {
		out.cmp(clientv3.Compare(clientv3.CreateRevision(nk), "<", seen+1))
		if v >= 0 {
			out.cmp(clientv3.Compare(clientv3.Version(nk), "=", int64(v)+1))
			plain = true
		}
		if plain {
			// The ZooKeeper version is the etcd version less one, and a
			// Set's new value keeps no base: only in the plain form.
			out.cmp(clientv3.Compare(clientv3.Value(nk), ">", plainLow))
			out.cmp(clientv3.Compare(clientv3.Value(nk), "<", plainHigh))
			return
		}
		out.cmp(clientv3.Compare(clientv3.CreateRevision(nk), ">", 0))
	}
	// bump counts a child's create or delete in the parent's cversion: a
	// put of its meta key that keeps value and lease, on a meta key of
	// this layout (absent: the replay writes the first).
	bump := func(q string) {
		qm := e.metaKey(q)
		out.cmp(clientv3.Compare(clientv3.Value(qm), ">", metaLow))
		out.add(clientv3.OpPut(qm, "", clientv3.WithIgnoreValue(), clientv3.WithIgnoreLease()), qm, 0)
	}
	for _, op := range ops {
		p := backend.OpPath(op)
		if p == "/" {
			return nil, false
		}
		nk := e.nodeKey(p)
		switch o := op.(type) {
		case regcenter.CreateOp:
			q := parentOf(p)
			if o.Mode == regcenter.EphemeralSequential || o.Mode == regcenter.PersistentSequential || !use([]string{p}, p, q) {
				return nil, false
			}
			mk, qk := e.metaKey(p), e.nodeKey(q)
			out.cmp(clientv3.Compare(clientv3.CreateRevision(nk), "=", 0))
			out.cmp(clientv3.Compare(clientv3.CreateRevision(mk), "=", 0))
			out.cmp(clientv3.Compare(clientv3.CreateRevision(qk), ">", 0))
			out.cmp(clientv3.Compare(clientv3.LeaseValue(qk), "=", 0))
			var l int64
			if o.Mode == regcenter.Ephemeral {
				l = lease
			}
			v := header{mtime: now}.encode(o.Data)
			out.add(clientv3.OpPut(nk, v, leaseOpts(l)...), nk, len(v))
			out.add(clientv3.OpPut(mk, encodeMeta(now, 0, 1), leaseOpts(l)...), mk, metaLen)
			bump(q)
			out.created = append(out.created, p)
		case regcenter.SetOp:
			if !use([]string{p}) {
				return nil, false
			}
			version(nk, o.Version, true)
			v := header{mtime: now}.encode(o.Data)
			out.add(clientv3.OpPut(nk, v, clientv3.WithIgnoreLease()), nk, len(v))
		case regcenter.CheckOp:
			if !use([]string{p}) {
				return nil, false
			}
			version(nk, o.Version, false)
		case regcenter.DeleteOp:
			q := parentOf(p)
			if !use([]string{p}, p, q) {
				return nil, false
			}
			version(nk, o.Version, false)
			cp := e.childPrefix(p)
			out.cmp(clientv3.Compare(clientv3.CreateRevision(cp), "=", 0).WithPrefix())
			mk := e.metaKey(p)
			out.add(clientv3.OpDelete(nk), nk, 0)
			out.add(clientv3.OpDelete(mk), mk, 0)
			bump(q)
		default:
			return nil, false
		}
	}
	return out, true
}

// txnResult is what a successful transaction gives back.
type txnResult struct {
	created []string     // the paths created, in op order
	reads   []*etcdRange // the answers to the extra reads
}

// checkPlanSize refuses a transaction larger than etcd's request limit.
func checkPlanSize(p *plan, ops int) error {
	if p.size > etcdMaxRequestBytes-etcdRequestSlack {
		return fmt.Errorf("%w: transaction of %d ops is %d bytes on etcd, over its request limit of %d",
			regcenter.ErrTooLarge, ops, p.size, etcdMaxRequestBytes-etcdRequestSlack)
	}
	return nil
}

// txn applies ops (clean paths) as one etcd transaction, then runs reads
// inside it. A failure is a *MultiError naming the first op that fails.
func (e *Center) txn(ctx context.Context, counter *atomic.Int64, ops []regcenter.Op, reads []clientv3.Op) (txnResult, error) {
	lease, now := e.currentLease(), time.Now().UnixMilli()
	var st *state // what the direct transaction's else branch read
	// guess until a guess has been wrong (see the top of this file); not
	// after a direct transaction failed: something in the list is not
	// as its ops expect.
	guess := true
	if dp, ok := e.directPlan(ops, lease, now); ok {
		guess = false
		if err := checkPlanSize(dp, len(ops)); err != nil {
			return txnResult{}, err
		}
		sr := e.stateReads(ops, nil, false)
		var orElse []clientv3.Op
		if sr.fitsElse(dp) {
			orElse = sr.ops(0, len(sr.reads))
		}
		var resp *clientv3.TxnResponse
		err := e.do(ctx, counter, func(ctx context.Context) error {
			var err error
			resp, err = e.commit(ctx, dp.cmps, append(dp.then, reads...), orElse)
			return err
		})
		if err != nil {
			return txnResult{}, err
		}
		if resp.Succeeded {
			return txnResult{created: dp.created, reads: ranges(resp)}, nil
		}
		if orElse != nil {
			sr.fill(0, ranges(resp))
			sr.st.rev = resp.Header.Revision
			st = sr.st
		}
	}
	var extra []string // sequential names to read on the next attempt
attempts:
	for attempt := 0; ; attempt++ {
		if st == nil {
			var err error
			if st, err = e.readState(ctx, ops, extra, guess); err != nil {
				return txnResult{}, err
			}
		}
		guessed := st.guessed
		pl := e.newPlanner(st, lease, now)
		st = nil
		for i, op := range ops {
			if err := pl.step(op); err != nil {
				if guessed {
					// Perhaps judged on a guess: judge on what is there.
					guess = false
					continue attempts
				}
				return txnResult{}, &regcenter.MultiError{Index: i, Op: op, Err: err}
			}
		}
		p := pl.finish()
		if err := checkPlanSize(p, len(ops)); err != nil {
			return txnResult{}, err
		}
		var resp *clientv3.TxnResponse
		err := e.do(ctx, counter, func(ctx context.Context) error {
			var err error
			resp, err = e.commit(ctx, p.cmps, append(p.then, reads...), nil)
			return err
		})
		if err != nil {
			return txnResult{}, err
		}
		if resp.Succeeded {
			return txnResult{created: p.created, reads: ranges(resp)}, nil
		}
		if guessed {
			// A node guessed absent exists (or something read changed):
			// read everything.
			guess = false
			continue
		}
		// Something read changed before the transaction: read again.
		if attempt >= etcdConflictRetries {
			return txnResult{}, fmt.Errorf("%w: the transaction kept conflicting with concurrent writes", regcenter.ErrConnectionLoss)
		}
		extra = append(extra[:0], pl.seqNames...)
		if err := e.backoff(ctx, attempt); err != nil {
			return txnResult{}, err
		}
		lease, now = e.currentLease(), time.Now().UnixMilli()
	}
}

// backoff waits a little, longer after each conflict, so that concurrent
// writers of one node do not keep failing each other.
func (e *Center) backoff(ctx context.Context, attempt int) error {
	d := min(time.Duration(attempt+1)*2*time.Millisecond, e.cfg.MaxSleep, 50*time.Millisecond)
	d = time.Duration(rand.Int64N(int64(d)) + 1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-e.done:
		return regcenter.ErrClosed
	case <-t.C:
		return nil
	}
}

// stateRead is one read of the replay's state and where its answer goes.
type stateRead struct {
	op   clientv3.Op
	into func(*etcdRange)
}

// stateReader is the list of reads the replay needs and the state they
// fill.
type stateReader struct {
	st    *state
	reads []stateRead
}

func (sr *stateReader) ops(from, to int) []clientv3.Op {
	out := make([]clientv3.Op, 0, to-from)
	for _, r := range sr.reads[from:to] {
		out = append(out, r.op)
	}
	return out
}

// fitsElse reports whether the reads go in the else branch of dp's
// transaction: as many as one read transaction holds (etcd's default
// --max-txn-ops is 128 for each branch), and bytes that fit beside dp's.
// A larger write reads only when its compares fail: every read rides in
// the transaction's raft entry, which costs the cluster more than the
// rare failure's reads.
func (sr *stateReader) fitsElse(dp *plan) bool {
	if len(sr.reads) > etcdReadBatch {
		return false
	}
	size := dp.size
	for _, r := range sr.reads {
		size += len(r.op.KeyBytes()) + len(r.op.RangeBytes()) + 16
	}
	return size <= etcdMaxRequestBytes-etcdRequestSlack
}

// fill hands the answers to the reads from index from on.
func (sr *stateReader) fill(from int, got []*etcdRange) {
	for i, r := range got {
		sr.reads[from+i].into(r)
	}
}

// stateReads lists what the ops need read: every node they name with its
// meta key, the parents of creates and deletes with theirs, and the
// children of deleted nodes. With guess, a node whose first operation is
// its own non-sequential create is not read: the replay takes it to be
// absent, and the transaction compares that it is.
func (e *Center) stateReads(ops []regcenter.Op, extra []string, guess bool) *stateReader {
	st := &state{nodes: map[string]*mvccpb.KeyValue{}, metas: map[string]*mvccpb.KeyValue{}, kids: map[string][]string{}}
	sr := &stateReader{st: st}
	var absent map[string]bool // guessed absent
	if guess {
		absent = map[string]bool{}
		touched := make(map[string]bool, 2*len(ops))
		for _, op := range ops {
			p := backend.OpPath(op)
			switch o := op.(type) {
			case regcenter.CreateOp:
				if p == "/" {
					break
				}
				touched[parentOf(p)] = true
				if o.Mode != regcenter.EphemeralSequential && o.Mode != regcenter.PersistentSequential && !touched[p] {
					absent[p] = true
				}
			case regcenter.DeleteOp:
				if p != "/" {
					touched[parentOf(p)] = true
				}
			}
			touched[p] = true
		}
		st.guessed = len(absent) > 0
	}
	addNode := func(p string) {
		if _, ok := st.nodes[p]; ok || absent[p] {
			return
		}
		st.nodes[p], st.metas[p] = nil, nil
		sr.reads = append(sr.reads,
			stateRead{clientv3.OpGet(e.nodeKey(p)), func(r *etcdRange) {
				if len(r.kvs) > 0 {
					st.nodes[p] = r.kvs[0]
				}
			}},
			stateRead{clientv3.OpGet(e.metaKey(p)), func(r *etcdRange) {
				if len(r.kvs) > 0 {
					st.metas[p] = r.kvs[0]
				}
			}})
	}
	for _, op := range ops {
		p := backend.OpPath(op)
		switch o := op.(type) {
		case regcenter.CreateOp:
			if p != "/" {
				addNode(parentOf(p))
			}
			if o.Mode != regcenter.EphemeralSequential && o.Mode != regcenter.PersistentSequential {
				addNode(p)
			}
		case regcenter.DeleteOp:
			addNode(p)
			if p != "/" {
				addNode(parentOf(p))
			}
			if _, ok := st.kids[p]; ok {
				continue
			}
			st.kids[p] = []string{}
			cp := e.childPrefix(p)
			sr.reads = append(sr.reads, stateRead{clientv3.OpGet(cp, clientv3.WithPrefix(), clientv3.WithKeysOnly()), func(r *etcdRange) {
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
	return sr
}

// readState reads what the ops need (stateReads, guessing with guess), in
// read transactions batched below etcd's default limit of operations per
// transaction; the compares catch a change between batches.
func (e *Center) readState(ctx context.Context, ops []regcenter.Op, extra []string, guess bool) (*state, error) {
	sr := e.stateReads(ops, extra, guess)
	for start := 0; start < len(sr.reads); start += etcdReadBatch {
		end := min(start+etcdReadBatch, len(sr.reads))
		got, rev, err := e.readTxn(ctx, sr.ops(start, end)...)
		if err != nil {
			return nil, err
		}
		sr.st.rev = rev
		sr.fill(start, got)
	}
	return sr.st, nil
}

// compareKV is the KV client under Center.kv: it sends a transaction with
// the compares its context carries (see commit), as they are.
// clientv3's Txn.If copies every compare through protobuf reflection, a
// tenth of the client's CPU for a transaction of a thousand creates,
// which carries two thousand compares.
type compareKV struct{ pb.KVClient }

// comparesKey is the context key of the compares commit hands to
// compareKV.
type comparesKey struct{}

// Txn sends in, with the compares ctx carries when in has none.
func (c compareKV) Txn(ctx context.Context, in *pb.TxnRequest, opts ...grpc.CallOption) (*pb.TxnResponse, error) {
	if cmps, ok := ctx.Value(comparesKey{}).([]*pb.Compare); ok && len(in.Compare) == 0 {
		in.Compare = cmps // in is the request Commit built for this call
	}
	return c.KVClient.Txn(ctx, in, opts...)
}

// commit sends one transaction: then when every compare of cmps holds,
// orElse otherwise.
func (e *Center) commit(ctx context.Context, cmps []clientv3.Cmp, then, orElse []clientv3.Op) (*clientv3.TxnResponse, error) {
	if len(cmps) > 0 {
		pcs := make([]*pb.Compare, len(cmps))
		for i := range cmps {
			pcs[i] = cmps[i].GetCompare()
		}
		ctx = context.WithValue(ctx, comparesKey{}, pcs)
	}
	resp, err := e.kv.Txn(ctx).Then(then...).Else(orElse...).Commit()
	if err == nil {
		e.see(resp.Header.Revision)
	}
	return resp, err
}
