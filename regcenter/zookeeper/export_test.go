package zookeeper

import "sync/atomic"

// SetWatchHooks makes z's watch dispatcher call beforeBatch before it takes
// a batch of notifications from its queue, and arming before it arms each
// watch (nil for none).
func SetWatchHooks(z *Center, beforeBatch, arming func()) {
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
func QueuedWatchTasks(z *Center) int {
	return z.watches.QueueLen()
}

// WithoutMultiRead makes z read as it does on a server older than 3.6,
// which has no multiRead: GetMany reads one node at a time.
func WithoutMultiRead(z *Center) { z.noMultiRead.Store(true) }
