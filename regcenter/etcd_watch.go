package regcenter

import (
	"context"
	"time"

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

func (e *Etcd) enqueue(t etcdTask) { e.watches.enqueue(t) }

// Watch registers a persistent watch. fn is first called with EventResync,
// after which every change reaches it.
func (e *Etcd) Watch(p string, kind WatchKind, fn func(Event)) (cancel func()) {
	if cp, err := cleanPath(p); err == nil {
		p = cp
	}
	key := watchKey{path: p, kind: kind}
	_, sub, cancel := e.watches.subscribe(key, fn)
	e.enqueue(etcdTask{key: key, sub: sub})
	return cancel
}

// WatchNow registers a persistent watch and reads the state it watches in
// the caller's goroutine (see Center.WatchNow). The subscription is in
// place before the read, and the namespace watch delivers every change
// after it, so nothing between the read and the next event is missed.
func (e *Etcd) WatchNow(ctx context.Context, p string, kind WatchKind, fn func(Event)) (WatchState, func(), error) {
	cp, err := cleanPath(p)
	if err != nil {
		return WatchState{}, func() {}, err
	}
	_, sub, cancel := e.watches.subscribe(watchKey{path: cp, kind: kind}, fn)
	var st WatchState
	err = e.do(ctx, &e.counters.watchReqs, func(ctx context.Context) error {
		ops := e.statOps(cp)
		if kind == WatchChildren {
			ops = e.childrenOps(cp)
		}
		resp, err := e.cli.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return err
		}
		rs := ranges(resp)
		if kind == WatchChildren {
			if rs[0].count > 0 {
				st = WatchState{Exists: true, Children: e.childNames(cp, rs[1])}
			}
			return nil
		}
		if _, s, ok := statOf(rs); ok {
			st = WatchState{Exists: true, Stat: s}
		}
		return nil
	})
	if err != nil {
		e.enqueue(etcdTask{key: watchKey{path: cp, kind: kind}, sub: sub})
		return WatchState{}, cancel, wrapPath("watch", p, err)
	}
	return st, cancel, nil
}

// WatchCount returns the number of watches registered (one per node and
// kind, however many subscribers share it). On etcd they are all served by
// one etcd watch.
func (e *Etcd) WatchCount() int { return e.watches.count() }

// watchLoop owns the namespace watch and the delivery of every event,
// until ctx ends.
func (e *Etcd) watchLoop(ctx context.Context) {
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
		e.counters.watchReqs.Add(1)
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
func (e *Etcd) consume(wch clientv3.WatchChan, rev *int64) (more, resync bool) {
	for {
		select {
		case <-e.done:
			return false, false
		case <-e.watchKick:
			return true, false
		case <-e.watches.queued():
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

func (e *Etcd) runTasks() {
	for _, t := range e.watches.take() {
		if t.resyncAll {
			e.resyncAll()
			continue
		}
		if w := e.watches.entry(t.key); w != nil {
			e.watches.deliverTo(t.sub, w, Event{Type: EventResync, Path: t.key.path})
		}
	}
}

func (e *Etcd) resyncAll() {
	for _, w := range e.watches.entries() {
		e.watches.deliver(w, Event{Type: EventResync, Path: w.key.path})
	}
}

// dispatchEvent maps one key event to the node events ZooKeeper would send.
func (e *Etcd) dispatchEvent(ev *clientv3.Event) {
	p, ok := e.pathOfNodeKey(string(ev.Kv.Key))
	if !ok {
		return
	}
	var typ EventType
	switch {
	case ev.Type == mvccpb.DELETE:
		typ = EventDeleted
	case ev.IsCreate():
		typ = EventCreated
	default:
		if h, _, _ := decodeNode(ev.Kv); h.czxid == czxidMod {
			// Deleted and created again in one transaction: both, as
			// ZooKeeper's watches see a multi that does so.
			e.dispatchPair(p)
			return
		}
		e.deliverKey(watchKey{path: p, kind: WatchNode}, EventDataChanged)
		return
	}
	e.deliverKey(watchKey{path: p, kind: WatchNode}, typ)
	e.deliverKey(watchKey{path: p, kind: WatchChildren}, typ)
	if p != "/" {
		e.deliverKey(watchKey{path: parentOf(p), kind: WatchChildren}, EventChildrenChanged)
	}
}

func (e *Etcd) dispatchPair(p string) {
	for _, typ := range []EventType{EventDeleted, EventCreated} {
		e.deliverKey(watchKey{path: p, kind: WatchNode}, typ)
		e.deliverKey(watchKey{path: p, kind: WatchChildren}, typ)
		if p != "/" {
			e.deliverKey(watchKey{path: parentOf(p), kind: WatchChildren}, EventChildrenChanged)
		}
	}
}

func (e *Etcd) deliverKey(k watchKey, typ EventType) {
	if w := e.watches.entry(k); w != nil {
		e.watches.deliver(w, Event{Type: typ, Path: k.path})
	}
}
