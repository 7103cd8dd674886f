package postgres_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

// events records session events for a test to wait on.
type events struct {
	mu  sync.Mutex
	evs []regcenter.SessionEvent
	ch  chan struct{}
}

func record(c regcenter.Center, tb testing.TB) *events {
	e := &events{ch: make(chan struct{}, 1)}
	tb.Cleanup(c.OnSession(func(ev regcenter.SessionEvent) {
		e.mu.Lock()
		e.evs = append(e.evs, ev)
		e.mu.Unlock()
		select {
		case e.ch <- struct{}{}:
		default:
		}
	}))
	return e
}

// await waits up to a minute for an event of type typ after the first
// from events, and returns its index.
func (e *events) await(tb testing.TB, from int, typ regcenter.SessionEventType) (int, regcenter.SessionEvent) {
	tb.Helper()
	deadline := time.After(time.Minute)
	for {
		e.mu.Lock()
		for i := from; i < len(e.evs); i++ {
			if e.evs[i].Type == typ {
				ev := e.evs[i]
				e.mu.Unlock()
				return i, ev
			}
		}
		e.mu.Unlock()
		select {
		case <-e.ch:
		case <-deadline:
			tb.Fatalf("no %v session event within a minute; got %v", typ, e.types())
		}
	}
}

func (e *events) types() []regcenter.SessionEventType {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []regcenter.SessionEventType
	for _, ev := range e.evs {
		out = append(out, ev.Type)
	}
	return out
}

func ctxFor(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	tb.Cleanup(cancel)
	return ctx
}

// A server that stops and comes back within the fencing lease costs a
// SessionSuspended and a SessionReconnected: the session, its id and its
// ephemeral nodes go on.
func TestServerBackWithinTheLease(t *testing.T) {
	srv := ownServer(t)
	url := newDatabase(t, srv)
	c := newCenter(t, url, regcenter.Config{Namespace: "brief", SessionTimeout: 15 * time.Second})
	ctx := ctxFor(t)
	if _, err := c.Create(ctx, "/owned", nil, regcenter.Ephemeral); err != nil {
		t.Fatal(err)
	}
	first := c.Session()
	evs := record(c, t)
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	i, _ := evs.await(t, 0, regcenter.SessionSuspended)
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	evs.await(t, i, regcenter.SessionReconnected)
	if got := evs.types(); slices.Contains(got, regcenter.SessionLost) {
		t.Errorf("events %v: the session was lost in a brief outage", got)
	}
	if c.Session() != first || first.Check() != nil {
		t.Fatalf("session %v (check %v), want the first one %v live", c.Session(), first.Check(), first)
	}
	_, st, err := c.Get(ctx, "/owned")
	if err != nil || st.EphemeralOwner != first.ID() {
		t.Fatalf("the ephemeral node after the outage: %+v, %v; want it owned by 0x%x", st, err, first.ID())
	}
}

// A server down for longer than the session timeout: the holder's fencing
// lease lapses first (SessionLost, its context cancelled, Check failing),
// the server's lease runs out meanwhile, and once the server is back the
// session is reaped (its ephemeral nodes with it) and a new one starts
// (SessionNew, a new id) without the holder doing anything.
func TestServerBackAfterTheLease(t *testing.T) {
	srv := ownServer(t)
	url := newDatabase(t, srv)
	const timeout = 2 * time.Second
	c := newCenter(t, url, regcenter.Config{Namespace: "long", SessionTimeout: timeout})
	ctx := ctxFor(t)
	if _, err := c.Create(ctx, "/owned", nil, regcenter.Ephemeral); err != nil {
		t.Fatal(err)
	}
	first := c.Session()
	evs := record(c, t)
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	i, lost := evs.await(t, 0, regcenter.SessionLost)
	if lost.Session != first || !errors.Is(first.Check(), regcenter.ErrSessionLost) {
		t.Fatalf("SessionLost for %v (check %v), want the first session, lost", lost.Session, first.Check())
	}
	if lapsed := time.Since(stopped); lapsed > timeout {
		t.Errorf("the fencing lease lapsed %v after the server stopped, later than the session timeout %v", lapsed, timeout)
	}
	// The server's clock must pass the lease it granted; it is stopped,
	// so there is nothing to poll.
	time.Sleep(timeout)
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	_, fresh := evs.await(t, i, regcenter.SessionNew)
	if fresh.Session.ID() == first.ID() || c.Session() != fresh.Session {
		t.Fatalf("new session %v, current %v; want a new id, current", fresh.Session, c.Session())
	}
	if ok, _, err := c.Exists(ctx, "/owned"); err != nil || ok {
		t.Fatalf("the lost session's ephemeral node: exists %v, %v; want it reaped", ok, err)
	}
	p, err := c.Create(ctx, "/owned", nil, regcenter.Ephemeral)
	if err != nil {
		t.Fatal(err)
	}
	if _, st, err := c.Get(ctx, p); err != nil || st.EphemeralOwner != fresh.Session.ID() {
		t.Fatalf("re-created node: %+v, %v; want it owned by 0x%x", st, err, fresh.Session.ID())
	}
}

// An ephemeral create under a session whose lease ran out on the server
// fails with ErrSessionLost and writes nothing, even before anyone reaped
// the session.
func TestEphemeralCreateNeedsALiveLease(t *testing.T) {
	url := newDatabase(t, pg)
	c := newCenter(t, url, regcenter.Config{Namespace: "fenced"})
	ctx := ctxFor(t)
	conn := c.Pool()
	if _, err := conn.Exec(ctx, "UPDATE shardjob_rc_sessions SET expires = now() - interval '1 second' WHERE id = $1", c.Session().ID()); err != nil {
		t.Fatal(err)
	}
	_, err := c.Create(ctx, "/e", nil, regcenter.Ephemeral)
	if !errors.Is(err, regcenter.ErrSessionLost) {
		t.Fatalf("ephemeral create under an expired lease: %v, want ErrSessionLost", err)
	}
	err = c.Multi(ctx, regcenter.CreateOp{Path: "/p"}, regcenter.CreateOp{Path: "/p/e", Mode: regcenter.EphemeralSequential})
	var me *regcenter.MultiError
	if !errors.As(err, &me) || me.Index != 1 || !errors.Is(err, regcenter.ErrSessionLost) {
		t.Fatalf("Multi with an ephemeral create under an expired lease: %v, want a MultiError at op 1 wrapping ErrSessionLost", err)
	}
	if ok, _, _ := c.Exists(ctx, "/p"); ok {
		t.Error("the failed Multi created /p")
	}
}
