package leader

import (
	"context"
	"strings"
	"sync"

	"github.com/shardjob/shardjob/internal/lazymap"

	"github.com/shardjob/shardjob/job/internal/reshard"
)

// Keys of the watches of Duties other than a server's name.
const (
	// ServersWatch is the key of the watch on the server list.
	ServersWatch = ""
	// RequestWatch is the key of the watch on reshard requests.
	RequestWatch = "/necessary"
)

// Duties is what this instance keeps for its leader's duties: the watches
// they arm (the server list, each server's flags, reshard requests), the
// servers it last resharded onto, and a generation that changes when
// leadership does. It owns its lock, taken only in this file; the turn,
// held while this instance reshards, repairs the books or checks the
// membership against its last reshard (Acquire), is a channel and needs
// none.
type Duties struct {
	mu          sync.Mutex
	watches     map[string]func() // cancels, by server name or a key above
	gen         chan struct{}     // closed and replaced when leadership changes
	lastSharded []string          // the eligible servers of the last reshard here
	sem         chan struct{}
}

// NewDuties returns the duties of an instance that has not led yet.
func NewDuties() *Duties {
	return &Duties{gen: make(chan struct{}), sem: make(chan struct{}, 1)} // watches: made at its first key (lazymap)
}

// BumpGen marks a change of leadership: Changed's channel is closed.
func (d *Duties) BumpGen() {
	d.mu.Lock()
	close(d.gen)
	d.gen = make(chan struct{})
	d.mu.Unlock()
}

// Changed returns a channel closed at the next change of leadership.
func (d *Duties) Changed() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.gen
}

// SetSharded records the servers a reshard here placed items on (nil:
// none yet under this leadership).
func (d *Duties) SetSharded(servers []string) {
	d.mu.Lock()
	d.lastSharded = servers
	d.mu.Unlock()
}

// Has reports whether the watch key is armed.
func (d *Duties) Has(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.watches[key]
	return ok
}

// Keep records cancel as the watch key, unless one is armed already or
// leading reports false: then it returns false and the caller cancels.
func (d *Duties) Keep(key string, cancel func(), leading func() bool) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, dup := d.watches[key]; dup || !leading() {
		return false
	}
	lazymap.Set(&d.watches, key, cancel)
	return true
}

// ArmOnce arms the watch key with arm unless it is armed.
func (d *Duties) ArmOnce(key string, arm func() (cancel func())) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.watches[key]; !ok {
		lazymap.Set(&d.watches, key, arm())
	}
}

// DropAll forgets every watch and returns their cancels.
func (d *Duties) DropAll() map[string]func() {
	d.mu.Lock()
	defer d.mu.Unlock()
	cancels := d.watches
	d.watches = nil
	return cancels
}

// WatchServers, while leading reports true, arms a watch (with arm) on
// each of servers not yet watched and cancels those of servers gone. It
// returns the servers of the last reshard here, and false if this
// instance no longer leads.
func (d *Duties) WatchServers(leading func() bool, servers reshard.Servers, arm func(server string) (cancel func())) (lastSharded []string, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !leading() {
		return nil, false
	}
	for _, sv := range servers.Names() {
		if _, ok := d.watches[sv]; !ok {
			lazymap.Set(&d.watches, sv, arm(sv))
		}
	}
	for sv, c := range d.watches {
		if _, ok := servers[sv]; !ok && sv != ServersWatch && !strings.HasPrefix(sv, "/") {
			c()
			delete(d.watches, sv)
		}
	}
	return d.lastSharded, true
}

// TryAcquire takes the turn to reshard or repair the books if no one
// holds it, and reports whether it did.
func (d *Duties) TryAcquire() bool {
	select {
	case d.sem <- struct{}{}:
		return true
	default:
		return false
	}
}

// Acquire waits for the turn to reshard or repair the books, one at a
// time on this instance, or for ctx's end: then it returns ctx.Err(). The
// caller gives the turn back with Release.
func (d *Duties) Acquire(ctx context.Context) error {
	select {
	case d.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Release gives back the turn taken by Acquire or TryAcquire.
func (d *Duties) Release() {
	<-d.sem
}
