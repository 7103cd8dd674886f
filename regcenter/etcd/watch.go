package etcd

import (
	"context"
	"time"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/internal/backend"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Watches on etcd. One etcd watch covers every node key of the namespace
// and is never re-armed: etcd watches persist. Its events are mapped to
// what ZooKeeper would send (a created key: created for the node, children
// changed for its parent; a deleted key: deleted, and children changed for
// the parent; a key written again: data changed) and handed to the
// subscribers of the node's watches on one dispatch goroutine, in revision
// order. When the stream has to be opened again (its member died, lost its
// leader, or the client was cut off), it resumes at the revision after the
// last event it delivered, so nothing is lost; when that revision has been
// compacted away, it resumes at the compaction revision and every
// subscriber gets EventResync, since changes in between are gone.

func (e *Center) enqueue(t etcdTask) { e.watches.Enqueue(t) }

// Watch registers a persistent watch. fn is first called with EventResync,
// after which every change reaches it.
func (e *Center) Watch(p string, kind regcenter.WatchKind, fn func(regcenter.Event)) (cancel func()) {
	if cp, err := cleanPath(p); err == nil {
		p = cp
	}
	key := backend.WatchKey{Path: p, Kind: kind}
	_, sub, cancel := e.watches.Subscribe(key, fn)
	e.enqueue(etcdTask{key: key, sub: sub})
	return cancel
}

// WatchNow registers a persistent watch and reads the state it watches
// (see Center.WatchNow), in one transaction with the reads of other
// WatchNow calls waiting then (readgroup.go). The subscription is in place
// before the read, and the namespace watch delivers every change after it,
// so nothing between the read and the next event is missed.
func (e *Center) WatchNow(ctx context.Context, p string, kind regcenter.WatchKind, fn func(regcenter.Event)) (regcenter.WatchState, func(), error) {
	cp, err := cleanPath(p)
	if err != nil {
		return regcenter.WatchState{}, func() {}, err
	}
	key := backend.WatchKey{Path: cp, Kind: kind}
	_, sub, cancel := e.watches.Subscribe(key, fn)
	r := &queuedRead{path: cp, children: kind == regcenter.WatchChildren}
	if err := e.groupRead(ctx, r); err != nil {
		e.enqueue(etcdTask{key: key, sub: sub})
		return regcenter.WatchState{}, cancel, backend.WrapPath("watch", p, err)
	}
	return r.st, cancel, nil
}

// WatchCount returns the number of watches registered (one per node and
// kind, however many subscribers share it). On etcd they are all served by
// one etcd watch.
func (e *Center) WatchCount() int { return e.watches.Count() }

// watchLoop owns the namespace watch and the delivery of every event,
// until ctx ends.
func (e *Center) watchLoop(ctx context.Context) {
	rev := e.startRev
	for {
		if hold := e.watchHold.Load(); hold != nil {
			select {
			case <-ctx.Done():
				return
			case <-*hold:
			}
		}
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(e.life))
		wch := e.cli.Watch(wctx, e.pfx+"n/", clientv3.WithPrefix(), clientv3.WithRev(rev), clientv3.WithProgressNotify())
		e.counters.Watches.Add(1)
		more, resync := e.consume(wch, &rev)
		cancel()
		if !more {
			return
		}
		if resync {
			e.log.Warn("etcd compacted revisions the namespace watch had not seen; every watch resyncs", "resume_at", rev)
			e.resyncAll()
		}
		t := time.NewTimer(e.cfg.BaseSleep)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// consume delivers the stream's events until it ends. It returns false
// when the center is closing, and resync when revisions were compacted
// before the stream could deliver them (rev is then the compaction
// revision).
func (e *Center) consume(wch clientv3.WatchChan, rev *int64) (more, resync bool) {
	for {
		select {
		case <-e.done:
			return false, false
		case <-e.watchKick:
			return true, false
		case <-e.watches.Queued():
			e.runTasks()
		case resp, ok := <-wch:
			if !ok {
				return true, false
			}
			if resp.CompactRevision != 0 {
				*rev = resp.CompactRevision
				return true, true
			}
			if err := resp.Err(); err != nil {
				e.log.Debug("etcd watch ended; resuming", "rev", *rev, "err", err)
				return true, false
			}
			e.see(resp.Header.Revision)
			for _, ev := range resp.Events {
				e.dispatchEvent(ev)
				*rev = ev.Kv.ModRevision + 1
			}
			if resp.IsProgressNotify() && resp.Header.Revision >= *rev {
				*rev = resp.Header.Revision + 1
			}
		}
	}
}

func (e *Center) runTasks() {
	for _, t := range e.watches.Take() {
		if t.resyncAll {
			e.resyncAll()
			continue
		}
		if w := e.watches.Entry(t.key); w != nil {
			e.watches.DeliverTo(t.sub, w, regcenter.Event{Type: regcenter.EventResync, Path: t.key.Path})
		}
	}
}

func (e *Center) resyncAll() {
	for _, w := range e.watches.Entries() {
		e.watches.Deliver(w, regcenter.Event{Type: regcenter.EventResync, Path: w.Key.Path})
	}
}

// dispatchEvent maps one key event to the node events ZooKeeper would send.
func (e *Center) dispatchEvent(ev *clientv3.Event) {
	p, ok := e.pathOfNodeKey(string(ev.Kv.Key))
	if !ok {
		return
	}
	var typ regcenter.EventType
	switch {
	case ev.Type == mvccpb.DELETE:
		typ = regcenter.EventDeleted
	case ev.IsCreate():
		typ = regcenter.EventCreated
	default:
		if h, _, _ := decodeNode(ev.Kv); h.czxid == czxidMod {
			// Deleted and created again in one transaction: both, as
			// ZooKeeper's watches see a multi that does so.
			e.dispatchPair(p)
			return
		}
		e.deliverKey(backend.WatchKey{Path: p, Kind: regcenter.WatchNode}, regcenter.EventDataChanged)
		return
	}
	e.deliverKey(backend.WatchKey{Path: p, Kind: regcenter.WatchNode}, typ)
	e.deliverKey(backend.WatchKey{Path: p, Kind: regcenter.WatchChildren}, typ)
	if p != "/" {
		e.deliverKey(backend.WatchKey{Path: parentOf(p), Kind: regcenter.WatchChildren}, regcenter.EventChildrenChanged)
	}
}

func (e *Center) dispatchPair(p string) {
	for _, typ := range []regcenter.EventType{regcenter.EventDeleted, regcenter.EventCreated} {
		e.deliverKey(backend.WatchKey{Path: p, Kind: regcenter.WatchNode}, typ)
		e.deliverKey(backend.WatchKey{Path: p, Kind: regcenter.WatchChildren}, typ)
		if p != "/" {
			e.deliverKey(backend.WatchKey{Path: parentOf(p), Kind: regcenter.WatchChildren}, regcenter.EventChildrenChanged)
		}
	}
}

func (e *Center) deliverKey(k backend.WatchKey, typ regcenter.EventType) {
	if w := e.watches.Entry(k); w != nil {
		e.watches.Deliver(w, regcenter.Event{Type: typ, Path: k.Path})
	}
}
