package zookeeper

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/shardjob/shardjob/internal/parallel"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/internal/backend"
)

// ZooKeeper watches fire once. A Watch here is persistent: when a
// notification arrives the dispatcher first re-arms the server-side watch
// and only then tells the subscribers, so a change that happens after the
// subscriber's re-read always produces another notification. A node that
// was deleted and re-created before the re-arm (which sends no second
// notification) is reported as both events, from the re-arm's answer. Subscribers
// re-read state on every event; events may be coalesced or repeated, but a
// change is never missed. All notifications come through go-zookeeper's
// event callback (never its lossy session channel) into an unbounded queue
// drained by one goroutine per process.

type taskKind int

const (
	taskNode      taskKind = iota + 1 // a node event from the server
	taskUnarmed                       // the server dropped a watch (EventNotWatching)
	taskResyncAll                     // new session: re-arm all, resync all
	taskArm                           // a new subscription: arm it, resync it
	taskRearm                         // reconnected: re-arm the watches that failed to arm
)

type task struct {
	kind   taskKind
	path   string
	zkType zk.EventType
	key    backend.WatchKey
	sub    *backend.WatchSub
}

func (z *Center) enqueue(t task) { z.watches.Enqueue(t) }

// Watch registers a persistent watch. fn is first called with EventResync
// once the watch is armed, so a caller that registers and then waits for
// events re-reads state after the watch is in place.
func (z *Center) Watch(p string, kind regcenter.WatchKind, fn func(regcenter.Event)) (cancel func()) {
	e, sub, cancel := z.watches.Subscribe(backend.WatchKey{Path: p, Kind: kind}, fn)
	z.enqueue(task{kind: taskArm, key: e.Key, sub: sub})
	return cancel
}

// WatchNow registers a persistent watch and arms it in the caller's
// goroutine (see regcenter.Center.WatchNow).
//
// The arming request runs beside the dispatcher, which may arm the same
// watch for an event or a new session at the same time; arming twice is
// harmless (ZooKeeper keeps one watch per node, kind and client). What must
// not happen is a watch believed armed on a session or client that is gone:
// the subscription is registered before the request, so a new session's
// re-arming of every watch includes it, and if the session or the client
// changed while the request was in flight, the watch is handed to the
// dispatcher like any new one.
func (z *Center) WatchNow(ctx context.Context, p string, kind regcenter.WatchKind, fn func(regcenter.Event)) (regcenter.WatchState, func(), error) {
	e, sub, cancel := z.watches.Subscribe(backend.WatchKey{Path: p, Kind: kind}, fn)
	sess, conn := z.Session(), z.client()
	full := z.full(p)
	st, err := call(ctx, z, &z.counters.Watches, func() (regcenter.WatchState, error) {
		if kind != regcenter.WatchChildren {
			ok, s, _, err := conn.ExistsW(full)
			if !ok {
				return regcenter.WatchState{}, err
			}
			return regcenter.WatchState{Exists: true, Stat: toStat(s)}, err
		}
		for attempt := 0; ; attempt++ {
			kids, _, _, err := conn.ChildrenW(full)
			if !errors.Is(err, zk.ErrNoNode) {
				return regcenter.WatchState{Exists: err == nil, Children: kids}, err
			}
			// Watch for the node's creation instead, as arm does; if it
			// was created in between, list its children after all.
			z.counters.Watches.Add(1)
			ok, _, _, err := conn.ExistsW(full)
			if err != nil || !ok {
				return regcenter.WatchState{}, err
			}
			if attempt > 0 {
				return regcenter.WatchState{}, fmt.Errorf("%w: %s created and deleted while arming", regcenter.ErrConnectionLoss, p)
			}
			z.counters.Watches.Add(1)
		}
	})
	if err == nil && (z.Session() != sess || sess.Err() != nil || z.client() != conn) {
		err = fmt.Errorf("%w: session changed while arming", regcenter.ErrConnectionLoss)
	}
	if err != nil {
		z.enqueue(task{kind: taskArm, key: e.Key, sub: sub})
		return regcenter.WatchState{}, cancel, backend.WrapPath("watch", p, err)
	}
	z.watches.SetArmed(e, true)
	return st, cancel, nil
}

// WatchCount returns the number of watches registered (one per node and
// kind, however many subscribers share it): what this client asks the
// servers to hold, data and children watches alike. ZooKeeper's own
// four-letter word wchs counts only the data watches.
func (z *Center) WatchCount() int { return z.watches.Count() }

// OnSession reconnect hooks: re-arm whatever failed while disconnected.
func (z *Center) rearmLater() { z.enqueue(task{kind: taskRearm}) }

func (z *Center) dispatchLoop(ctx context.Context) {
	cancel := z.OnSession(func(ev regcenter.SessionEvent) {
		if ev.Type == regcenter.SessionReconnected {
			z.rearmLater()
		}
	})
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			return
		case <-z.watches.Queued():
		}
		for {
			if h := z.beforeBatch.Load(); h != nil {
				(*h)()
			}
			batch := z.watches.Take()
			if len(batch) == 0 {
				break
			}
			if !z.runTasks(batch) {
				return
			}
		}
	}
}

// rearmers bounds the re-arming requests a batch of notifications sends at
// once.
const rearmers = 64

// runTasks runs a batch taken from the queue, in order, and reports false
// once the client is closing. Node events and new subscriptions in a row
// re-arm their watches concurrently, and each subscriber is told only after
// its own watch's re-arm answered, in queue order. One after another, a
// burst of notifications (a reshard of a few hundred jobs writes as many
// nodes) cost one round trip each before the last subscriber heard of its
// change: a second and more on a busy server.
func (z *Center) runTasks(batch []task) bool {
	for i := 0; i < len(batch); {
		select {
		case <-z.done:
			return false
		default:
		}
		j := i
		for j < len(batch) && concurrent(batch[j].kind) {
			j++
		}
		if j == i {
			z.runTask(batch[i])
			i++
			continue
		}
		z.runConcurrently(batch[i:j])
		i = j
	}
	return true
}

// concurrent reports whether tasks of kind may re-arm side by side.
func concurrent(k taskKind) bool { return k == taskNode || k == taskArm }

// rearm is one watch a batch re-arms, and what the re-arm answered.
type rearm struct {
	e             *backend.WatchEntry
	exists, armed bool
	alreadyArmed  bool // a new subscription to a watch that was armed
}

// runConcurrently runs node events and new subscriptions: it re-arms
// every watch they concern, rearmers at a time, then delivers their events
// in order, as runTask does one by one.
func (z *Center) runConcurrently(ts []task) {
	plans := make([][]rearm, len(ts))
	var all []*rearm
	for i, t := range ts {
		switch t.kind {
		case taskArm:
			e := z.watches.Entry(t.key)
			if e == nil {
				continue
			}
			plans[i] = []rearm{{e: e, alreadyArmed: z.watches.IsArmed(e)}}
		case taskNode:
			_, kinds := nodeEvent(t.zkType)
			for _, k := range kinds {
				if e := z.watches.Entry(backend.WatchKey{Path: t.path, Kind: k}); e != nil {
					z.watches.SetArmed(e, false)
					plans[i] = append(plans[i], rearm{e: e})
				}
			}
		}
		for j := range plans[i] {
			if !plans[i][j].alreadyArmed {
				all = append(all, &plans[i][j])
			}
		}
	}
	parallel.Each(len(all), rearmers, func(i int) {
		all[i].exists, all[i].armed = z.arm(all[i].e)
	})
	for i, t := range ts {
		switch t.kind {
		case taskArm:
			if len(plans[i]) > 0 {
				z.watches.DeliverTo(t.sub, plans[i][0].e, regcenter.Event{Type: regcenter.EventResync, Path: t.key.Path})
			}
		case taskNode:
			typ, _ := nodeEvent(t.zkType)
			for _, p := range plans[i] {
				z.deliverNodeEvent(p.e, typ, t.path, p.exists, p.armed)
			}
		}
	}
}

func (z *Center) runTask(t task) {
	switch t.kind { // taskArm and taskNode go through runConcurrently
	case taskUnarmed:
		for _, k := range []regcenter.WatchKind{regcenter.WatchNode, regcenter.WatchChildren} {
			if e := z.watches.Entry(backend.WatchKey{Path: t.path, Kind: k}); e != nil {
				z.watches.SetArmed(e, false)
			}
		}
	case taskResyncAll, taskRearm:
		var es []*backend.WatchEntry
		for _, e := range z.watches.Entries() {
			if t.kind == taskRearm && z.watches.IsArmed(e) {
				continue
			}
			z.watches.SetArmed(e, false)
			es = append(es, e)
		}
		// A new session re-arms every watch of the process: side by side.
		parallel.Each(len(es), rearmers, func(i int) { z.arm(es[i]) })
		for _, e := range es {
			z.watches.Deliver(e, regcenter.Event{Type: regcenter.EventResync, Path: e.Key.Path})
		}
	}
}

// nodeEvent maps a server notification to the event subscribers get and
// the kinds of watch it concerns.
func nodeEvent(t zk.EventType) (regcenter.EventType, []regcenter.WatchKind) {
	switch t {
	case zk.EventNodeCreated:
		return regcenter.EventCreated, []regcenter.WatchKind{regcenter.WatchNode, regcenter.WatchChildren}
	case zk.EventNodeDeleted:
		return regcenter.EventDeleted, []regcenter.WatchKind{regcenter.WatchNode, regcenter.WatchChildren}
	case zk.EventNodeDataChanged:
		return regcenter.EventDataChanged, []regcenter.WatchKind{regcenter.WatchNode}
	case zk.EventNodeChildrenChanged:
		return regcenter.EventChildrenChanged, []regcenter.WatchKind{regcenter.WatchChildren}
	}
	return 0, nil
}

// deliverNodeEvent tells e's subscribers of a node event, after e was
// re-armed (exists and armed are the re-arm's answer).
func (z *Center) deliverNodeEvent(e *backend.WatchEntry, typ regcenter.EventType, p string, exists, armed bool) {
	z.watches.Deliver(e, regcenter.Event{Type: typ, Path: p})
	// A node deleted and created again (or the reverse) before the re-arm
	// sends no second notification: the re-arm's answer shows it, and the
	// subscribers hear of the change that followed.
	if armed && e.Key.Kind == regcenter.WatchNode {
		switch {
		case typ == regcenter.EventDeleted && exists:
			z.watches.Deliver(e, regcenter.Event{Type: regcenter.EventCreated, Path: p})
		case typ == regcenter.EventCreated && !exists:
			z.watches.Deliver(e, regcenter.Event{Type: regcenter.EventDeleted, Path: p})
		}
	}
}

// arm sets the server-side watch for e. Failures leave it unarmed; it is
// retried after the next reconnection or new session, and subscribers then
// get an EventResync.
//
// For a node watch it reports whether the node existed when the watch was
// set; armed is false when it could not be set.
func (z *Center) arm(e *backend.WatchEntry) (exists, armed bool) {
	if h := z.arming.Load(); h != nil {
		(*h)()
	}
	full := z.full(e.Key.Path)
	var err error
	z.counters.Watches.Add(1)
	switch e.Key.Kind {
	case regcenter.WatchNode:
		exists, _, _, err = z.client().ExistsW(full)
	case regcenter.WatchChildren:
		_, _, _, err = z.client().ChildrenW(full)
		if errors.Is(err, zk.ErrNoNode) {
			// Watch for the node's creation instead; the creation event
			// re-arms the children watch.
			z.counters.Watches.Add(1)
			_, _, _, err = z.client().ExistsW(full)
		}
	}
	if err != nil {
		z.log.Debug("watch not armed; will retry after reconnect", "path", e.Key.Path, "err", err)
		return false, false
	}
	z.watches.SetArmed(e, true)
	return exists, true
}
