package centertest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

// ZooKeeperSessionTimeout is the session timeout of the centers
// [ZooKeeperFactory] makes: short, so that expiring a session takes
// seconds, and long enough that a loaded machine running the tests with
// -race does not lose sessions it was not asked to.
const ZooKeeperSessionTimeout = 4 * time.Second

// ZooKeeperFactory returns a [Factory] for [zookeeper.Center] centers on
// cluster, with every capability: each center reaches the members through
// a [zktest.Proxy] of its own, which ExpireSession blocks until the servers
// have expired the session; Restart restarts every member. Proxies and
// centers are closed when the test that made them ends.
func ZooKeeperFactory(cluster *zktest.Cluster) Factory {
	z := &zkFactory{cluster: cluster, proxies: map[regcenter.Center][]*zktest.Proxy{}}
	return Factory{New: z.new, ExpireSession: z.expire, Restart: z.restart}
}

type zkFactory struct {
	cluster *zktest.Cluster

	mu      sync.Mutex
	proxies map[regcenter.Center][]*zktest.Proxy // of every open center
}

func (z *zkFactory) new(tb testing.TB, namespace string) regcenter.Center {
	tb.Helper()
	var servers []string
	var proxies []*zktest.Proxy
	for _, addr := range z.cluster.Servers() {
		p, err := zktest.NewProxy(addr)
		if err != nil {
			tb.Fatalf("zookeeper factory: proxy to %s: %v", addr, err)
		}
		tb.Cleanup(func() {
			if err := p.Close(); err != nil {
				tb.Errorf("zookeeper factory: closing the proxy to %s: %v", addr, err)
			}
		})
		proxies = append(proxies, p)
		servers = append(servers, p.Addr())
	}
	ctx, cancel := context.WithTimeout(tb.Context(), 30*time.Second)
	defer cancel()
	c, err := zookeeper.Open(ctx, regcenter.Config{Servers: servers, Namespace: namespace, SessionTimeout: ZooKeeperSessionTimeout})
	if err != nil {
		tb.Fatalf("zookeeper factory: %v", err)
	}
	z.mu.Lock()
	z.proxies[c] = proxies
	z.mu.Unlock()
	// Registered after the proxies', so it runs before them.
	tb.Cleanup(func() {
		z.mu.Lock()
		delete(z.proxies, c)
		z.mu.Unlock()
		if err := c.Close(); err != nil {
			tb.Errorf("zookeeper factory: close: %v", err)
		}
	})
	return c
}

// expire cuts c off from the servers until they have expired its session
// (no member lists it among its connections any more), then lets it
// reconnect: it is told its session expired and opens a new one.
func (z *zkFactory) expire(tb testing.TB, c regcenter.Center) {
	tb.Helper()
	z.mu.Lock()
	proxies, ok := z.proxies[c]
	z.mu.Unlock()
	if !ok {
		tb.Fatalf("zookeeper factory: ExpireSession of a center this factory did not make (or closed)")
	}
	sess := c.Session()
	sid := fmt.Sprintf("sid=0x%x", sess.ID())
	if listed, err := z.listed(tb.Context(), sid); err != nil || !listed {
		tb.Fatalf("zookeeper factory: session 0x%x is not among the servers' connections (%v)", sess.ID(), err)
	}
	for _, p := range proxies {
		p.Block()
	}
	defer func() {
		for _, p := range proxies {
			p.Unblock()
		}
	}()
	eventually(tb, fmt.Sprintf("zookeeper expires session 0x%x", sess.ID()), func() (bool, string) {
		listed, err := z.listed(tb.Context(), sid)
		switch {
		case err != nil:
			return false, err.Error()
		case listed:
			return false, "a member still lists the session"
		}
		return true, ""
	})
}

// listed reports whether any running member lists sid ("sid=0x...") in
// its answer to the four-letter word cons.
func (z *zkFactory) listed(ctx context.Context, sid string) (bool, error) {
	for _, addr := range z.cluster.Servers() {
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		answer, err := zktest.FourLetter(fctx, addr, "cons")
		cancel()
		if err != nil {
			return false, fmt.Errorf("cons on %s: %w", addr, err)
		}
		if strings.Contains(answer, sid+",") || strings.Contains(answer, sid+")") {
			return true, nil
		}
	}
	return false, nil
}

func (z *zkFactory) restart(tb testing.TB) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), 2*time.Minute)
	defer cancel()
	if err := z.cluster.RestartAll(ctx); err != nil {
		tb.Fatalf("zookeeper factory: restart: %v", err)
	}
}
