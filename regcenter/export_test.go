package regcenter

import "sync/atomic"

// QueuedMultis reports how many Multi calls wait in c's queue (c made by
// GroupCommit), for tests that build a group on purpose.
func QueuedMultis(c Center) int {
	g := c.(*groupCommit)
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}

// SetWatchHooks makes z's watch dispatcher call beforeBatch before it takes
// a batch of notifications from its queue, and arming before it arms each
// watch (nil for none).
func SetWatchHooks(z *ZooKeeper, beforeBatch, arming func()) {
	set := func(p *atomic.Pointer[func()], f func()) {
		if f == nil {
			p.Store(nil)
		} else {
			p.Store(&f)
		}
	}
	set(&z.beforeBatch, beforeBatch)
	set(&z.arming, arming)
}

// QueuedWatchTasks reports how many notifications and subscriptions wait in
// z's watch queue.
func QueuedWatchTasks(z *ZooKeeper) int {
	return z.watches.queueLen()
}
