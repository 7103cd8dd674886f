package zookeeper_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

var zk *zktest.Cluster

func TestMain(m *testing.M) { os.Exit(zktest.RunTests(m, &zk)) }

var nsN atomic.Int64

func connect(t *testing.T, cfg regcenter.Config) *zookeeper.Center {
	t.Helper()
	if cfg.Servers == nil {
		cfg.Servers = zk.Servers()
	}
	if cfg.Namespace == "" {
		cfg.Namespace = fmt.Sprintf("rc%d-%d", os.Getpid(), nsN.Add(1))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	z, err := zookeeper.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { z.Close() })
	return z
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestUnreachableFailsWithinConnectTimeout(t *testing.T) {
	start := time.Now()
	_, err := zookeeper.Open(context.Background(), regcenter.Config{Servers: []string{"127.0.0.1:1"}, ConnectTimeout: 500 * time.Millisecond})
	if !errors.Is(err, regcenter.ErrUnreachable) {
		t.Fatalf("got %v, want ErrUnreachable", err)
	}
	t.Logf("unreachable reported after %v: %v", time.Since(start).Round(time.Millisecond), err)
}

func TestInvalidConfigNamesTheField(t *testing.T) {
	for _, c := range []struct {
		cfg  regcenter.Config
		want string
	}{
		{regcenter.Config{}, "servers"},
		{regcenter.Config{Servers: []string{"nohost"}}, "host:port"},
		{regcenter.Config{Servers: []string{"a:1"}, Namespace: "a/b"}, "namespace"},
		{regcenter.Config{Servers: []string{"a:1"}, Digest: "nocolon"}, "digest"},
		{regcenter.Config{Servers: []string{"a:1"}, MaxRetries: 10, MaxSleep: time.Second, SessionTimeout: 2 * time.Second}, "retry budget"},
	} {
		err := c.cfg.Validate()
		if !errors.Is(err, regcenter.ErrInvalidConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v, want ErrInvalidConfig mentioning %q", c.cfg, err, c.want)
		}
	}
}

func TestDigestProtectsNamespace(t *testing.T) {
	ns := fmt.Sprintf("acl%d", os.Getpid())
	owner := connect(t, regcenter.Config{Namespace: ns, Digest: "ops:secret"})
	if _, err := owner.Create(ctx(t), "/job/config", []byte("x"), regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	_, err := zookeeper.Open(ctx(t), regcenter.Config{Servers: zk.Servers(), Namespace: ns, Digest: "ops:wrong"})
	if !errors.Is(err, regcenter.ErrUnauthorized) {
		t.Fatalf("wrong digest: got %v, want ErrUnauthorized", err)
	}
	_, err = zookeeper.Open(ctx(t), regcenter.Config{Servers: zk.Servers(), Namespace: ns})
	if !errors.Is(err, regcenter.ErrUnauthorized) {
		t.Fatalf("no digest: got %v, want ErrUnauthorized", err)
	}
	t.Logf("no digest: %v", err)
}

func TestMultiIsAtomicAndNamesTheFailedOp(t *testing.T) {
	z := connect(t, regcenter.Config{})
	c := ctx(t)
	if _, err := z.Create(c, "/a/b", nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	err := z.Multi(c,
		regcenter.CreateOp{Path: "/a/c"},
		regcenter.CreateOp{Path: "/a/b"}, // exists: the whole transaction fails
	)
	var me *regcenter.MultiError
	if !errors.As(err, &me) || me.Index != 1 || !errors.Is(err, regcenter.ErrNodeExists) {
		t.Fatalf("got %v, want MultiError at op 1 wrapping ErrNodeExists", err)
	}
	if ok, _, _ := z.Exists(c, "/a/c"); ok {
		t.Fatal("first op of a failed transaction was applied")
	}
	err = z.Multi(c, regcenter.CheckOp{Path: "/a/b", Version: 7})
	if !errors.Is(err, regcenter.ErrBadVersion) {
		t.Fatalf("check: got %v, want ErrBadVersion", err)
	}
}

func TestWatchSeesEveryChangeAfterReRead(t *testing.T) {
	z := connect(t, regcenter.Config{})
	c := ctx(t)
	events := make(chan regcenter.Event, 100)
	cancel := z.Watch("/w", regcenter.WatchChildren, func(e regcenter.Event) { events <- e })
	defer cancel()
	next := func() regcenter.Event {
		select {
		case e := <-events:
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("no watch event")
		}
		return regcenter.Event{}
	}
	if e := next(); e.Type != regcenter.EventResync {
		t.Fatalf("first event %v, want resync", e)
	}
	// Many changes in a burst: after the last event, a re-read must see
	// them all (events may coalesce; state may not be missed).
	for i := 0; i < 50; i++ {
		if _, err := z.Create(c, fmt.Sprintf("/w/n%02d", i), nil, regcenter.Persistent); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.After(10 * time.Second)
	for {
		kids, err := z.Children(c, "/w")
		if err != nil {
			t.Fatal(err)
		}
		if len(kids) == 50 {
			break
		}
		select {
		case <-events:
		case <-deadline:
			t.Fatalf("after events, re-read sees %d children, want 50", len(kids))
		}
	}
}

// A node deleted and created again in one transaction sends a single
// notification (the server's watch fires once); the watch still reports
// both changes, so a subscriber that follows events without re-reading
// ends up with the right state.
func TestWatchReportsRecreationBeforeReArm(t *testing.T) {
	z := connect(t, regcenter.Config{})
	c := ctx(t)
	if _, err := z.Create(c, "/n", []byte("a"), regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	events := make(chan regcenter.EventType, 100)
	cancel := z.Watch("/n", regcenter.WatchNode, func(e regcenter.Event) { events <- e.Type })
	defer cancel()
	next := func() regcenter.EventType {
		select {
		case e := <-events:
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("no watch event")
		}
		return 0
	}
	if e := next(); e != regcenter.EventResync {
		t.Fatalf("first event %v, want resync", e)
	}
	for round := 0; round < 3; round++ {
		if err := z.Multi(c, regcenter.DeleteOp{Path: "/n", Version: -1}, regcenter.CreateOp{Path: "/n", Data: []byte("b")}); err != nil {
			t.Fatal(err)
		}
		if e := next(); e != regcenter.EventDeleted {
			t.Fatalf("round %d: event %v, want deleted", round, e)
		}
		if e := next(); e != regcenter.EventCreated {
			t.Fatalf("round %d: event %v, want created after the re-creation", round, e)
		}
	}
}

func TestSessionExpiryGivesNewSessionAndResyncsWatches(t *testing.T) {
	proxy, err := zktest.NewProxy(zk.Servers()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	z := connect(t, regcenter.Config{Servers: []string{proxy.Addr()}, SessionTimeout: 2 * time.Second})
	first := z.Session()
	sessEvents := make(chan regcenter.SessionEvent, 10)
	defer z.OnSession(func(e regcenter.SessionEvent) { sessEvents <- e })()
	watchEvents := make(chan regcenter.Event, 10)
	defer z.Watch("/x", regcenter.WatchNode, func(e regcenter.Event) { watchEvents <- e })()
	<-watchEvents // armed

	proxy.Block()
	// The lease lapses on the monotonic clock before the server can
	// expire the session.
	waitFor(t, 5*time.Second, func() bool { return first.Check() != nil })
	if !errors.Is(first.Check(), regcenter.ErrSessionLost) {
		t.Fatalf("Check = %v, want ErrSessionLost", first.Check())
	}
	select {
	case <-first.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("session context not cancelled after the lease lapsed")
	}
	time.Sleep(3 * time.Second) // past the server's session timeout
	proxy.Unblock()
	waitFor(t, 15*time.Second, func() bool { s := z.Session(); return s != first && s.Err() == nil })
	second := z.Session()
	if second.ID() == first.ID() {
		t.Fatalf("same zookeeper session after expiry")
	}
	var types []regcenter.SessionEventType
	deadline := time.After(10 * time.Second)
	for len(types) == 0 || types[len(types)-1] != regcenter.SessionNew {
		select {
		case e := <-sessEvents:
			types = append(types, e.Type)
		case <-deadline:
			t.Fatalf("session events %v, want ... new-session", types)
		}
	}
	// The watch is re-armed on the new session and says so.
	select {
	case e := <-watchEvents:
		if e.Type != regcenter.EventResync {
			t.Fatalf("watch event after new session %v, want resync", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no resync for the watch after the new session")
	}
	if _, err := z.Create(ctx(t), "/x", nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-watchEvents:
		if e.Type != regcenter.EventCreated {
			t.Fatalf("got %v, want created", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watch dead after new session")
	}
}

func TestSurvivesLossOfAnEnsembleMember(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an ensemble")
	}
	ens := zktest.Start(t, zktest.WithSize(3))
	z := connect(t, regcenter.Config{Servers: ens.Servers(), SessionTimeout: 6 * time.Second})
	first := z.Session()
	leader, err := ens.Leader(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := ens.Kill(leader); err != nil {
		t.Fatal(err)
	}
	// Requests keep working (after a reconnect to another member) in the
	// same session.
	waitFor(t, 20*time.Second, func() bool {
		_, err := z.Create(ctx(t), "/after-kill", nil, regcenter.Persistent)
		return err == nil || errors.Is(err, regcenter.ErrNodeExists)
	})
	if z.Session() != first || first.Err() != nil {
		t.Fatalf("session changed after losing one member: %v -> %v (%v)", first, z.Session(), first.Err())
	}
}

func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// EnsurePath of a path that exists costs one read, whatever its depth: jobs
// registering again and items firing again ensure paths that are there.
func TestEnsurePathOfAnExistingPathIsOneRead(t *testing.T) {
	z := connect(t, regcenter.Config{})
	c := ctx(t)
	if err := z.EnsurePath(c, "/e/f/g/h"); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := z.Exists(c, "/e/f/g/h"); err != nil || !ok {
		t.Fatalf("EnsurePath did not create the path: %v %v", ok, err)
	}
	before := z.Stats()
	if err := z.EnsurePath(c, "/e/f/g/h"); err != nil {
		t.Fatal(err)
	}
	if d := z.Stats().Sub(before); d.Total() != 1 || d.Reads != 1 {
		t.Errorf("EnsurePath of an existing path: %+v, want one read", d)
	}
}

// WatchNow arms in the caller's goroutine and returns what it read: no
// resync follows, every change after the read is delivered, and the watch
// is re-armed (with a resync) on a new session like any other.
func TestWatchNowReturnsStateAndKeepsWatching(t *testing.T) {
	proxy, err := zktest.NewProxy(zk.Servers()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	z := connect(t, regcenter.Config{Servers: []string{proxy.Addr()}, SessionTimeout: 2 * time.Second})
	c := ctx(t)
	if _, err := z.Create(c, "/wn/a", nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	kidsEvents := make(chan regcenter.Event, 10)
	st, cancelKids, err := z.WatchNow(c, "/wn", regcenter.WatchChildren, func(e regcenter.Event) { kidsEvents <- e })
	if err != nil {
		t.Fatal(err)
	}
	defer cancelKids()
	if !st.Exists || len(st.Children) != 1 || st.Children[0] != "a" {
		t.Fatalf("children state %+v, want [a]", st)
	}
	nodeEvents := make(chan regcenter.Event, 10)
	st, cancelNode, err := z.WatchNow(c, "/wn/b", regcenter.WatchNode, func(e regcenter.Event) { nodeEvents <- e })
	if err != nil {
		t.Fatal(err)
	}
	defer cancelNode()
	if st.Exists {
		t.Fatalf("node state %+v, want missing", st)
	}
	next := func(ch chan regcenter.Event) regcenter.Event {
		select {
		case e := <-ch:
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("no watch event")
		}
		return regcenter.Event{}
	}
	if _, err := z.Create(c, "/wn/b", nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	if e := next(kidsEvents); e.Type != regcenter.EventChildrenChanged {
		t.Fatalf("children event %v, want children changed (no resync first)", e)
	}
	if e := next(nodeEvents); e.Type != regcenter.EventCreated {
		t.Fatalf("node event %v, want created (no resync first)", e)
	}

	first := z.Session()
	proxy.Block()
	waitFor(t, 5*time.Second, func() bool { return first.Check() != nil })
	time.Sleep(3 * time.Second) // past the server's session timeout
	proxy.Unblock()
	waitFor(t, 15*time.Second, func() bool { s := z.Session(); return s != first && s.Err() == nil })
	if e := next(nodeEvents); e.Type != regcenter.EventResync {
		t.Fatalf("node event after new session %v, want resync", e)
	}
	if _, err := z.Set(ctx(t), "/wn/b", []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	for {
		if e := next(nodeEvents); e.Type == regcenter.EventDataChanged {
			break
		}
	}
}

// GetMany of a few nodes is one multiRead; on a server without multiRead
// (older than 3.6) it reads them one Get each, with the same answers.
func TestGetManyIsOneMultiReadOrOneGetEach(t *testing.T) {
	z := connect(t, regcenter.Config{})
	c := ctx(t)
	if _, err := z.Create(c, "/gm/a", []byte("a"), regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	paths := []string{"/gm/a", "/gm/missing", "/gm"}
	read := func() ([]regcenter.NodeData, regcenter.Stats) {
		before := z.Stats()
		got, err := z.GetMany(c, paths...)
		if err != nil {
			t.Fatal(err)
		}
		return got, z.Stats().Sub(before)
	}
	many, d := read()
	if d.Total() != 1 || d.Reads != 1 {
		t.Errorf("GetMany of %d paths: %+v, want one read", len(paths), d)
	}
	zookeeper.WithoutMultiRead(z)
	each, d := read()
	if d.Total() != int64(len(paths)) || d.Reads != int64(len(paths)) {
		t.Errorf("GetMany of %d paths without multiRead: %+v, want a read each", len(paths), d)
	}
	for i := range paths {
		if many[i].Exists != each[i].Exists || string(many[i].Data) != string(each[i].Data) || many[i].Stat.Mzxid != each[i].Stat.Mzxid {
			t.Errorf("%s: %+v by multiRead, %+v one at a time", paths[i], many[i], each[i])
		}
	}
	if !many[0].Exists || string(many[0].Data) != "a" || many[1].Exists || !many[2].Exists {
		t.Errorf("answers %+v", many)
	}
}
