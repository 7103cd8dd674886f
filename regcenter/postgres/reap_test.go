package postgres_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

// A lapsed session is reaped once, by whichever live clients get to it:
// two reaping at once delete its ephemeral nodes in one transaction, a
// watcher hears of each deletion once, and the parent counts each once.
func TestReapIsIdempotent(t *testing.T) {
	url := newDatabase(t, pg)
	a := newCenter(t, url, regcenter.Config{Namespace: "reap"})
	b := newCenter(t, url, regcenter.Config{Namespace: "reap"})
	doomed := newCenter(t, url, regcenter.Config{Namespace: "reap"})
	ctx := ctxFor(t)
	for _, p := range []string{"/eph/x", "/eph/y"} {
		if err := doomed.EnsurePath(ctx, "/eph"); err != nil {
			t.Fatal(err)
		}
		if _, err := doomed.Create(ctx, p, nil, regcenter.Ephemeral); err != nil {
			t.Fatal(err)
		}
	}
	_, before, err := a.Get(ctx, "/eph")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var evs []regcenter.EventType
	deleted := make(chan struct{}, 10)
	_, cancel, err := a.WatchNow(ctx, "/eph/x", regcenter.WatchNode, func(e regcenter.Event) {
		mu.Lock()
		evs = append(evs, e.Type)
		mu.Unlock()
		deleted <- struct{}{}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	// The lease runs out on the server's clock; nobody has reaped it yet.
	if _, err := a.Pool().Exec(ctx, "UPDATE shardjob_rc_sessions SET expires = now() - interval '1 second' WHERE id = $1", doomed.Session().ID()); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, c := range []interface{ HeartbeatNow() bool }{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !c.HeartbeatNow() {
				t.Error("a heartbeat was not answered")
			}
		}()
	}
	wg.Wait()
	kids, err := b.Children(ctx, "/eph")
	if err != nil || len(kids) != 0 {
		t.Fatalf("children of /eph after the reap: %v, %v; want none", kids, err)
	}
	_, after, err := b.Get(ctx, "/eph")
	if err != nil {
		t.Fatal(err)
	}
	if after.CVersion != before.CVersion+2 || after.NumChildren != 0 {
		t.Errorf("/eph after the reap: cversion %d (was %d), %d children; want 2 more, none", after.CVersion, before.CVersion, after.NumChildren)
	}
	select {
	case <-deleted:
	case <-time.After(20 * time.Second):
		t.Fatal("the watcher did not hear of the deletion")
	}
	// Another change on the watched path proves the reader moved past
	// the reap's revision: a second deletion would have come first.
	if _, err := b.Create(ctx, "/eph/x", nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	select {
	case <-deleted:
	case <-time.After(20 * time.Second):
		t.Fatal("the watcher did not hear of the creation")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(evs) != 2 || evs[0] != regcenter.EventDeleted || evs[1] != regcenter.EventCreated {
		t.Errorf("events on /eph/x: %v, want [deleted created]", evs)
	}
}

// A session is its id and its holder's token: a row that carries the id
// with another token (an id issued again after a failover) is not the
// holder's, and the holder's heartbeat finds its session gone.
func TestSessionIsIDAndToken(t *testing.T) {
	url := newDatabase(t, pg)
	c := newCenter(t, url, regcenter.Config{Namespace: "token"})
	ctx := ctxFor(t)
	first := c.Session()
	if _, err := c.Pool().Exec(ctx, "UPDATE shardjob_rc_sessions SET token = token + 1 WHERE id = $1", first.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, "/e", nil, regcenter.Ephemeral); !errors.Is(err, regcenter.ErrSessionLost) {
		t.Fatalf("ephemeral create under a session row with another token: %v, want ErrSessionLost", err)
	}
	c.HeartbeatNow()
	select {
	case <-first.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the session goes on though its row is someone else's")
	}
	if !errors.Is(first.Err(), regcenter.ErrSessionLost) {
		t.Fatalf("session ended with %v, want ErrSessionLost", first.Err())
	}
}

// A lapsed session is reaped when its lease runs out, not at the live
// clients' next renewal: a heartbeat that reads another session's lease
// running out sooner sends the reaping heartbeat then. Both sessions here
// renew every two minutes, so only that heartbeat can reap within the
// test's minute.
func TestALapseIsReapedWhenItComes(t *testing.T) {
	url := newDatabase(t, pg)
	long := regcenter.Config{Namespace: "lapse", SessionTimeout: 10 * time.Minute}
	a := newCenter(t, url, long)
	doomed := newCenter(t, url, long)
	ctx := ctxFor(t)
	if err := doomed.EnsurePath(ctx, "/eph"); err != nil {
		t.Fatal(err)
	}
	if _, err := doomed.Create(ctx, "/eph/d", nil, regcenter.Ephemeral); err != nil {
		t.Fatal(err)
	}
	deleted := make(chan struct{}, 1)
	_, cancel, err := a.WatchNow(ctx, "/eph/d", regcenter.WatchNode, func(e regcenter.Event) {
		if e.Type == regcenter.EventDeleted {
			select {
			case deleted <- struct{}{}:
			default:
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	// The doomed session's lease now runs out in two seconds on the
	// server's clock; a's heartbeat reads that.
	if _, err := a.Pool().Exec(ctx, "UPDATE shardjob_rc_sessions SET expires = now() + interval '2 seconds' WHERE id = $1", doomed.Session().ID()); err != nil {
		t.Fatal(err)
	}
	if !a.HeartbeatNow() {
		t.Fatal("a heartbeat was not answered")
	}
	select {
	case <-deleted:
	case <-time.After(time.Minute):
		t.Fatal("the lapsed session's ephemeral node is still there a minute later: not reaped when its lease ran out")
	}
}
