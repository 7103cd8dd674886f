package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/etcd"
	"github.com/shardjob/shardjob/regcenter/etcdtest"
)

// eventLog collects a watch's events for a test.
type eventLog struct {
	mu  sync.Mutex
	evs []regcenter.Event
	ch  chan struct{}
}

func newEventLog() *eventLog { return &eventLog{ch: make(chan struct{}, 1)} }

func (l *eventLog) add(ev regcenter.Event) {
	l.mu.Lock()
	l.evs = append(l.evs, ev)
	l.mu.Unlock()
	select {
	case l.ch <- struct{}{}:
	default:
	}
}

// waitFor waits until ok holds for the events so far, failing after 20s.
func (l *eventLog) waitFor(t *testing.T, what string, ok func([]regcenter.Event) bool) {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		done := ok(append([]regcenter.Event(nil), l.evs...))
		l.mu.Unlock()
		if done {
			return
		}
		select {
		case <-l.ch:
		case <-deadline.C:
			l.mu.Lock()
			defer l.mu.Unlock()
			t.Fatalf("waiting for %s: got %v", what, l.evs)
		}
	}
}

func waitSession(t *testing.T, ch <-chan regcenter.SessionEvent, want regcenter.SessionEventType) regcenter.SessionEvent {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		select {
		case ev := <-ch:
			if ev.Type == want {
				return ev
			}
		case <-deadline.C:
			t.Fatalf("no %v session event", want)
		}
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestEtcdLeaseLapse: with every keepalive lost, the fencing lease lapses
// on the client (Check fails, SessionLost) before etcd expires the lease;
// once etcd has, a new lease is a new session and the ephemeral node of
// the old one is gone.
func TestEtcdLeaseLapse(t *testing.T) {
	cluster := etcdtest.Start(t)
	c := newEtcdCenter(t, cluster, regcenter.Config{Namespace: "lapse", SessionTimeout: 2 * time.Second})
	other := newEtcdCenter(t, cluster, regcenter.Config{Namespace: "lapse"})
	ctx := testCtx(t)
	events := make(chan regcenter.SessionEvent, 16)
	defer c.OnSession(func(ev regcenter.SessionEvent) { events <- ev })()
	old := c.Session()
	if _, err := c.Create(ctx, "/eph", nil, regcenter.Ephemeral); err != nil {
		t.Fatal(err)
	}
	etcd.SetKeepAlive(c, false)
	lost := waitSession(t, events, regcenter.SessionLost)
	if lost.Session != old || !errors.Is(old.Check(), regcenter.ErrSessionLost) || !errors.Is(context.Cause(old.Ctx()), regcenter.ErrSessionLost) {
		t.Fatalf("lost %v; old session check %v", lost.Session, old.Check())
	}
	// etcd expires the lease a full TTL after the last keepalive: the
	// ephemeral node goes then.
	for {
		ok, _, err := other.Exists(ctx, "/eph")
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the ephemeral node of an expired lease is still there")
		case <-time.After(50 * time.Millisecond):
		}
	}
	etcd.SetKeepAlive(c, true)
	next := waitSession(t, events, regcenter.SessionNew)
	if next.Session.ID() == old.ID() || next.Session.Check() != nil {
		t.Fatalf("new session %v (old %v), check %v", next.Session, old, next.Session.Check())
	}
	// The new session's ephemeral nodes are its own.
	if _, err := c.Create(ctx, "/eph", nil, regcenter.Ephemeral); err != nil {
		t.Fatal(err)
	}
	if _, st, err := other.Get(ctx, "/eph"); err != nil || st.EphemeralOwner != next.Session.ID() {
		t.Fatalf("re-created ephemeral: owner %x, %v; want %x", st.EphemeralOwner, err, next.Session.ID())
	}
}

// TestEtcdRevokedLeaseEndsTheSessionAtTheNextRequest: a lease etcd revoked
// (a leader resuming from a freeze revokes every lease it heard nothing
// of) ends the session as soon as a request is answered that the lease is
// gone — the keepalive sent at once confirms it — not at the next
// keepalive, a fifth of the TTL later, while every request meanwhile fails
// the same way. The TTL here is a minute: the next keepalive is 12 s away.
func TestEtcdRevokedLeaseEndsTheSessionAtTheNextRequest(t *testing.T) {
	cluster := etcdtest.Start(t)
	c := newEtcdCenter(t, cluster, regcenter.Config{Namespace: "revoked", SessionTimeout: time.Minute})
	ctx := testCtx(t)
	s := c.Session()
	cli, err := cluster.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	// Right after a keepalive: the next one is a fifth of the TTL away.
	for k := c.KeepAlives(); c.KeepAlives() == k; {
		select {
		case <-ctx.Done():
			t.Fatal("no keepalive")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if _, err := cli.Revoke(ctx, clientv3.LeaseID(s.ID())); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, "/eph", nil, regcenter.Ephemeral); !errors.Is(err, regcenter.ErrSessionLost) {
		t.Fatalf("create under a revoked lease: %v, want ErrSessionLost", err)
	}
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second): // a generous bound, well inside the 12 s to the next keepalive
		t.Fatalf("etcd revoked lease %x and answered so; the session is still live", s.ID())
	}
	if err := s.Err(); !errors.Is(err, regcenter.ErrSessionLost) {
		t.Fatalf("session ended with %v, want ErrSessionLost", err)
	}
}

// TestEtcdWatchAcrossMemberRestarts: a children watch on a three-member
// cluster whose members are killed and restarted one after another sees
// every child created, in order.
func TestEtcdWatchAcrossMemberRestarts(t *testing.T) {
	cluster := etcdtest.Start(t, etcdtest.WithSize(3))
	c := newEtcdCenter(t, cluster, regcenter.Config{Namespace: "restarts"})
	ctx := testCtx(t)
	if err := c.EnsurePath(ctx, "/w"); err != nil {
		t.Fatal(err)
	}
	// Node watches on each child to be made: every creation must arrive.
	const perRound = 5
	var paths []string
	logs := map[string]*eventLog{}
	for i := range cluster.Size() * 2 * perRound {
		p := fmt.Sprintf("/w/n%03d", i)
		l := newEventLog()
		if _, cancel, err := c.WatchNow(ctx, p, regcenter.WatchNode, l.add); err != nil {
			t.Fatal(err)
		} else {
			defer cancel()
		}
		paths, logs[p] = append(paths, p), l
	}
	next := 0
	// A write in flight when the leader dies waits for an answer that
	// never comes (the member that forwarded it drops it), and so fails
	// with ErrConnectionLoss, applied or not: as a caller must, create
	// again, and take "exists" after a lost attempt as done.
	create := func() {
		for range perRound {
			lost := false
			for attempt := 0; ; attempt++ {
				_, err := c.Create(ctx, paths[next], nil, regcenter.Persistent)
				if err == nil || (lost && errors.Is(err, regcenter.ErrNodeExists)) {
					break
				}
				if !errors.Is(err, regcenter.ErrConnectionLoss) || attempt == 5 {
					t.Fatal(err)
				}
				lost = true
			}
			next++
		}
	}
	for i := range cluster.Size() {
		create()
		if err := cluster.Kill(i); err != nil {
			t.Fatal(err)
		}
		create()
		if err := cluster.StartMember(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range paths {
		logs[p].waitFor(t, "creation of "+p, func(evs []regcenter.Event) bool {
			for _, ev := range evs {
				if ev.Type == regcenter.EventCreated {
					return true
				}
			}
			return false
		})
	}
}

// TestEtcdCompactionResync: a watch that must resume from a compacted
// revision resyncs its subscribers.
func TestEtcdCompactionResync(t *testing.T) {
	cluster := etcdtest.Start(t)
	c := newEtcdCenter(t, cluster, regcenter.Config{Namespace: "compact"})
	ctx := testCtx(t)
	l := newEventLog()
	if _, cancel, err := c.WatchNow(ctx, "/x", regcenter.WatchNode, l.add); err != nil {
		t.Fatal(err)
	} else {
		defer cancel()
	}
	release := etcd.HoldWatch(c)
	if _, err := c.Create(ctx, "/x", nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set(ctx, "/x", []byte("1"), -1); err != nil {
		t.Fatal(err)
	}
	cli, err := cluster.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	resp, err := cli.Get(ctx, "/")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	release()
	l.waitFor(t, "a resync", func(evs []regcenter.Event) bool {
		return len(evs) > 0 && evs[len(evs)-1].Type == regcenter.EventResync
	})
	// And the watch goes on after it.
	if _, err := c.Set(ctx, "/x", []byte("2"), -1); err != nil {
		t.Fatal(err)
	}
	l.waitFor(t, "the change after the resync", func(evs []regcenter.Event) bool {
		return evs[len(evs)-1].Type == regcenter.EventDataChanged
	})
}

// TestEtcdAuthAndTLS: a user and password from a file, over mutual TLS,
// reach the namespace the user's role allows and nothing else; a wrong
// password and a missing client certificate are refused with their
// sentinels.
func TestEtcdAuthAndTLS(t *testing.T) {
	cluster := etcdtest.Start(t, etcdtest.WithMutualTLS(), etcdtest.WithAuth("rootpw"))
	ctx := testCtx(t)
	files, _ := cluster.TLS()
	admin, err := cluster.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for _, step := range []func() error{
		func() error { _, err := admin.UserAdd(ctx, "app", "s3cret"); return err },
		func() error { _, err := admin.RoleAdd(ctx, "app"); return err },
		func() error {
			_, err := admin.RoleGrantPermission(ctx, "app", "/shop/", clientv3.GetPrefixRangeEnd("/shop/"), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := admin.UserGrantRole(ctx, "app", "app"); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(t.TempDir(), "etcd-user")
	if err := os.WriteFile(secret, []byte("app:s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tlsCfg := regcenter.Config{TLSCAFile: files.CAFile, TLSCertFile: files.CertFile, TLSKeyFile: files.KeyFile}
	cfg := tlsCfg
	cfg.Namespace, cfg.DigestFile = "shop", secret
	c := newEtcdCenter(t, cluster, cfg)
	if _, err := c.Create(ctx, "/orders/config", []byte("x"), regcenter.Persistent); err != nil {
		t.Fatal(err)
	}

	try := func(cfg regcenter.Config) error {
		cfg.Etcd = cluster.Endpoints()
		if cfg.ConnectTimeout == 0 {
			cfg.ConnectTimeout = 20 * time.Second
		}
		c, err := etcd.Open(ctx, cfg)
		if err == nil {
			c.Close()
		}
		return err
	}
	other := tlsCfg
	other.Namespace, other.DigestFile = "bank", secret
	if err := try(other); !errors.Is(err, regcenter.ErrUnauthorized) {
		t.Errorf("a namespace the role does not cover: %v, want ErrUnauthorized", err)
	}
	wrong := tlsCfg
	wrong.Namespace, wrong.Digest = "shop", "app:wrong"
	if err := try(wrong); !errors.Is(err, regcenter.ErrUnauthorized) {
		t.Errorf("a wrong password: %v, want ErrUnauthorized", err)
	}
	// A handshake the server refuses is retried until the connect timeout:
	// a short one, since the answer is known.
	noCert := regcenter.Config{TLSCAFile: files.CAFile, Namespace: "shop", DigestFile: secret, ConnectTimeout: 3 * time.Second}
	if err := try(noCert); !errors.Is(err, regcenter.ErrTLS) && !errors.Is(err, regcenter.ErrUnreachable) {
		t.Errorf("no client certificate: %v, want ErrTLS or ErrUnreachable", err)
	}
}
