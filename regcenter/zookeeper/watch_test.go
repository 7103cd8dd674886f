package zookeeper_test

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

// A burst of notifications — a reshard of many jobs writes as many nodes —
// re-arms its watches side by side, and each subscriber still hears of its
// change only after its own watch is armed again, in the order the
// notifications came. One re-arm at a time, the last subscriber of a burst
// heard of its change a round trip per notification late.
func TestBurstOfNotificationsReArmsSideBySide(t *testing.T) {
	z := connect(t, regcenter.Config{})
	c := ctx(t)
	const n = 30
	var mu sync.Mutex
	var changed []string
	resynced := make(chan struct{}, n)
	for i := range n {
		p := fmt.Sprintf("/b%02d", i)
		if _, err := z.Create(c, p, nil, regcenter.Persistent); err != nil {
			t.Fatal(err)
		}
		cancel := z.Watch(p, regcenter.WatchNode, func(ev regcenter.Event) {
			switch ev.Type {
			case regcenter.EventResync:
				resynced <- struct{}{}
			case regcenter.EventDataChanged:
				mu.Lock()
				changed = append(changed, ev.Path)
				mu.Unlock()
			}
		})
		t.Cleanup(cancel)
	}
	for range n {
		select {
		case <-resynced:
		case <-time.After(10 * time.Second):
			t.Fatal("watches not armed")
		}
	}

	// Hold the dispatcher so that the whole burst is one batch.
	hold := make(chan struct{})
	unhold := sync.OnceFunc(func() { close(hold) })
	t.Cleanup(unhold) // a failing test must not leave the dispatcher stuck
	var holding sync.Once
	zookeeper.SetWatchHooks(z, func() { holding.Do(func() { <-hold }) }, nil)
	var ops []regcenter.Op
	for i := range n {
		ops = append(ops, regcenter.SetOp{Path: fmt.Sprintf("/b%02d", i), Data: []byte("x"), Version: -1})
	}
	if err := z.Multi(c, ops...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() bool { return zookeeper.QueuedWatchTasks(z) >= n })

	var arming atomic.Int32
	release := make(chan struct{})
	unrelease := sync.OnceFunc(func() { close(release) })
	t.Cleanup(unrelease)
	zookeeper.SetWatchHooks(z, nil, func() {
		arming.Add(1)
		<-release
	})
	unhold()
	waitFor(t, 10*time.Second, func() bool { return arming.Load() >= n }) // one at a time: stuck at 1
	mu.Lock()
	early := len(changed)
	mu.Unlock()
	if early != 0 {
		t.Fatalf("%d subscribers told before their watch was armed again", early)
	}
	zookeeper.SetWatchHooks(z, nil, nil)
	unrelease()
	waitFor(t, 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(changed) >= n
	})
	mu.Lock()
	defer mu.Unlock()
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprintf("/b%02d", i)
	}
	if !slices.Equal(changed, want) {
		t.Fatalf("told in the order %v, want the notifications' order %v", changed, want)
	}
	if after := z.Stats(); after.Watches < 2*n {
		t.Fatalf("watch requests %d, want at least %d (arm and re-arm)", after.Watches, 2*n)
	}
}
