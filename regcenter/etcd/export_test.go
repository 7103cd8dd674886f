package etcd

import (
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardjob/shardjob/regcenter"
)

// SetKeepAlive turns e's lease keepalives off (as when every one is
// lost) or back on.
func SetKeepAlive(e *Center, on bool) { e.keepAliveOff.Store(!on) }

// HoldWatch closes e's namespace watch and keeps it closed until
// release is called; it then resumes from the last revision it delivered.
func HoldWatch(e *Center) (release func()) {
	ch := make(chan struct{})
	e.watchHold.Store(&ch)
	select {
	case e.watchKick <- struct{}{}:
	default:
	}
	return func() {
		e.watchHold.Store(nil)
		close(ch)
	}
}

// NodeKey is the etcd key that holds node p's header and data, for
// tests that write it with a raw client, past the center.
func NodeKey(e *Center, p string) string { return e.nodeKey(p) }

// MetaKey is the etcd key of node p's ctime and cversion.
func MetaKey(e *Center, p string) string { return e.metaKey(p) }

// DirectTxn is the transaction e would send first for ops (false: ops go
// to the replay), for tests that apply it late, past the center, as a
// member that held it would.
func DirectTxn(e *Center, ops ...regcenter.Op) (cmps []clientv3.Cmp, then []clientv3.Op, ok bool) {
	p, ok := e.directPlan(ops, e.currentLease(), time.Now().UnixMilli())
	if !ok {
		return nil, nil, false
	}
	return p.cmps, p.then, true
}
