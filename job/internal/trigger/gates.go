package trigger

import (
	"sync"
	"time"
)

// Gates hands out channels that close when a time comes: one channel and
// one timer per time, however many wait for it. The fires of many jobs due
// at the same second, dispatched ahead of it (the lead), wait for it on one
// timer rather than one each. The zero value is ready.
type Gates struct {
	mu sync.Mutex
	m  map[int64]chan struct{} // by the time's UnixNano, until it closes
}

// Until returns the channel of time t, which closes once c reads t (its
// timer set by the first call for t). A gate ends with its time: its timer
// fires once and removes it, whether anyone still waits or not.
func (g *Gates) Until(c Clock, t time.Time) <-chan struct{} {
	key := t.UnixNano()
	g.mu.Lock()
	defer g.mu.Unlock()
	if ch, ok := g.m[key]; ok {
		return ch
	}
	if g.m == nil {
		g.m = map[int64]chan struct{}{}
	}
	ch := make(chan struct{})
	g.m[key] = ch
	c.AfterFunc(t, func() {
		g.mu.Lock()
		delete(g.m, key)
		g.mu.Unlock()
		close(ch)
	})
	return ch
}

// Pending is how many gates have not closed yet.
func (g *Gates) Pending() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.m)
}
