package main

import (
	"context"
	"sync"
	"time"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/tools/chaos/eventlog"
)

// statusWatcher follows every instance's servers/{id}/status ephemeral node
// through the harness's own ZooKeeper session, logging each appearance and
// disappearance: the disappearance of a crashed instance's node is the
// moment its session ended on the server, where failover delays are
// measured from.
type statusWatcher struct {
	rc    regcenter.Center
	event func(eventlog.Event)

	mu      sync.Mutex
	present map[string]bool
	changed chan struct{} // closed and replaced on every change

	resync  chan string
	cancels []func()
	stop    context.CancelFunc
	wg      sync.WaitGroup
}

func statusPath(job, id string) string { return "/" + job + "/servers/" + id + "/status" }

func newStatusWatcher(rc regcenter.Center, job string, ids []string, event func(eventlog.Event)) *statusWatcher {
	w := &statusWatcher{rc: rc, event: event, present: map[string]bool{}, changed: make(chan struct{}), resync: make(chan string, 64)}
	ctx, cancel := context.WithCancel(context.Background())
	w.stop = cancel
	w.wg.Add(1)
	go w.resyncLoop(ctx, job)
	for _, id := range ids {
		w.cancels = append(w.cancels, rc.Watch(statusPath(job, id), regcenter.WatchNode, func(ev regcenter.Event) {
			switch ev.Type {
			case regcenter.EventCreated:
				w.set(id, true, "watch")
			case regcenter.EventDeleted:
				w.set(id, false, "watch")
			case regcenter.EventResync:
				select {
				case w.resync <- id:
				default:
				}
			}
		}))
	}
	return w
}

// resyncLoop re-reads a node after its watch was (re)armed; a change found
// this way is logged with the time it was found, which may be late.
func (w *statusWatcher) resyncLoop(ctx context.Context, job string) {
	defer w.wg.Done()
	for {
		var id string
		select {
		case <-ctx.Done():
			return
		case id = <-w.resync:
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ok, _, err := w.rc.Exists(rctx, statusPath(job, id))
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(300 * time.Millisecond):
			}
			select {
			case w.resync <- id:
			default:
			}
			continue
		}
		w.set(id, ok, "resync")
	}
}

func (w *statusWatcher) set(id string, present bool, how string) {
	w.mu.Lock()
	was, known := w.present[id]
	if known && was == present {
		w.mu.Unlock()
		return
	}
	w.present[id] = present
	close(w.changed)
	w.changed = make(chan struct{})
	w.mu.Unlock()
	if !known && !present {
		return // absent from the start: nothing happened
	}
	ev := eventlog.StatusGone
	if present {
		ev = eventlog.StatusUp
	}
	w.event(eventlog.Event{Ev: ev, Inst: id, Detail: how})
}

// waitPresent waits until every id's status node exists, or ctx ends.
func (w *statusWatcher) waitPresent(ctx context.Context, ids []string) error {
	for {
		w.mu.Lock()
		all := true
		for _, id := range ids {
			all = all && w.present[id]
		}
		ch := w.changed
		w.mu.Unlock()
		if all {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (w *statusWatcher) close() {
	for _, c := range w.cancels {
		c()
	}
	w.stop()
	w.wg.Wait()
}
