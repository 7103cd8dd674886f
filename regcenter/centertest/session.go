package centertest

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/shardjob/shardjob/regcenter"
)

// testClosed: after Close every request fails with ErrClosed, the session's
// context is cancelled with ErrClosed as its cause, and closing again is
// harmless.
func testClosed(t testing.TB, s *suite) {
	c := s.center(t)
	mustCreate(t, c, "/n", []byte("x"), regcenter.Persistent)
	mustCreate(t, c, "/n/k", nil, regcenter.Persistent)
	sess := c.Session()
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case <-sess.Done():
	default:
		t.Error("the session is not done after Close returned")
	}
	if cause := context.Cause(sess.Ctx()); !errors.Is(cause, regcenter.ErrClosed) {
		t.Errorf("session context cause after Close: %v, want ErrClosed", cause)
	}
	if err := sess.Err(); !errors.Is(err, regcenter.ErrClosed) {
		t.Errorf("Session.Err after Close: %v, want ErrClosed", err)
	}
	ctx := ctxFor(t)
	calls := map[string]error{}
	_, _, calls["Get"] = c.Get(ctx, "/n")
	_, _, calls["Exists"] = c.Exists(ctx, "/n")
	_, calls["Children"] = c.Children(ctx, "/n")
	_, calls["Create"] = c.Create(ctx, "/new", nil, regcenter.Persistent)
	calls["EnsurePath"] = c.EnsurePath(ctx, "/e/f")
	_, calls["Set"] = c.Set(ctx, "/n", []byte("y"), -1)
	calls["Delete"] = c.Delete(ctx, "/n/k", -1)
	calls["DeleteTree"] = c.DeleteTree(ctx, "/n")
	calls["Multi"] = c.Multi(ctx, regcenter.SetOp{Path: "/n", Data: []byte("y"), Version: -1})
	_, cancel, err := c.WatchNow(ctx, "/n", regcenter.WatchNode, func(regcenter.Event) {})
	calls["WatchNow"] = err
	if cancel != nil {
		cancel()
	}
	for _, name := range slices.Sorted(maps.Keys(calls)) {
		if err := calls[name]; !errors.Is(err, regcenter.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	if err := c.Close(); err != nil && !errors.Is(err, regcenter.ErrClosed) {
		t.Errorf("second Close: %v, want nil or ErrClosed", err)
	}
	// Nothing was written: a second client reads the tree as it was.
	other := s.center(t)
	if data, _ := mustGet(t, other, "/n"); string(data) != "x" {
		t.Errorf("/n holds %s after writes on a closed center, want \"x\"", quote(data))
	}
	if !exists(t, other, "/n/k") || exists(t, other, "/new") || exists(t, other, "/e") {
		t.Error("a request on a closed center changed the tree")
	}
}

// testEphemeralGoneOnClose: a closed center's ephemeral nodes are gone as
// soon as Close returns, as a second client sees; its persistent nodes stay.
func testEphemeralGoneOnClose(t testing.TB, s *suite) {
	a := s.center(t)
	b := s.center(t)
	mustCreate(t, a, "/live/eph", []byte("a"), regcenter.Ephemeral)
	seq := mustCreate(t, a, "/live/seq-", nil, regcenter.EphemeralSequential)
	mustCreate(t, a, "/live/kept", nil, regcenter.Persistent)
	for _, p := range []string{"/live/eph", seq, "/live/kept"} {
		if !exists(t, b, p) {
			t.Fatalf("a second client does not see %s", p)
		}
	}
	if _, st := mustGet(t, b, "/live/eph"); st.EphemeralOwner != a.Session().ID() || st.EphemeralOwner == b.Session().ID() {
		t.Errorf("owner seen by the second client 0x%x, want the creator's session 0x%x", st.EphemeralOwner, a.Session().ID())
	}
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// At once: not after a session timeout.
	for _, p := range []string{"/live/eph", seq} {
		if exists(t, b, p) {
			t.Errorf("ephemeral %s still exists after its center's Close returned", p)
		}
	}
	if kids := mustChildren(t, b, "/live"); !slices.Equal(kids, []string{"kept"}) {
		t.Errorf("Children(/live) after Close = %v, want [kept]", kids)
	}
}

// testSessionLoss: when the servers end a session, its ephemeral nodes go,
// the center reports SessionLost then SessionNew, the lost session's
// context is cancelled with ErrSessionLost, the new session has a new id,
// and watches are resynchronised and keep working.
func testSessionLoss(t testing.TB, s *suite) {
	s.needExpire(t)
	a := s.center(t)
	b := s.center(t)
	ctx := ctxFor(t)
	mustCreate(t, a, "/owned/eph", []byte("a"), regcenter.Ephemeral)
	mustCreate(t, a, "/owned/kept", nil, regcenter.Persistent)
	first := a.Session()
	sessions := newRecorder[regcenter.SessionEvent]()
	defer a.OnSession(sessions.add)()
	watch := newRecorder[regcenter.Event]()
	st, cancel, err := a.WatchNow(ctx, "/flag", regcenter.WatchNode, watch.add)
	if err != nil {
		t.Fatalf("WatchNow: %v", err)
	}
	defer cancel()
	if st.Exists {
		t.Fatal("WatchNow says /flag exists")
	}

	s.f.ExpireSession(t, a)

	eventually(t, "the expired session's ephemeral node gone, as a second client sees", gone(ctx, b, "/owned/eph"))
	if !exists(t, b, "/owned/kept") {
		t.Error("a persistent node went with the session")
	}
	lostThenNew := func(evs []regcenter.SessionEvent) bool {
		lost := slices.IndexFunc(evs, func(e regcenter.SessionEvent) bool { return e.Type == regcenter.SessionLost })
		return lost >= 0 && slices.ContainsFunc(evs[lost:], func(e regcenter.SessionEvent) bool { return e.Type == regcenter.SessionNew })
	}
	evs := sessions.await(t, "SessionLost then SessionNew", lostThenNew)
	lost := evs[slices.IndexFunc(evs, func(e regcenter.SessionEvent) bool { return e.Type == regcenter.SessionLost })]
	if lost.Session != first {
		t.Errorf("SessionLost names session %v, want the first one %v", lost.Session, first)
	}
	var fresh *regcenter.Session
	for _, e := range evs {
		if e.Type == regcenter.SessionNew {
			fresh = e.Session
		}
	}
	select {
	case <-first.Done():
	default:
		t.Error("the lost session's Done is not closed")
	}
	if cause := context.Cause(first.Ctx()); !errors.Is(cause, regcenter.ErrSessionLost) {
		t.Errorf("lost session's context cause: %v, want ErrSessionLost", cause)
	}
	if err := first.Check(); !errors.Is(err, regcenter.ErrSessionLost) {
		t.Errorf("lost session's Check: %v, want ErrSessionLost", err)
	}
	cur := a.Session()
	if fresh == nil || fresh == first || fresh.ID() == first.ID() {
		t.Fatalf("SessionNew names %v, want a session other than 0x%x", fresh, first.ID())
	}
	if cur == first || cur.ID() == first.ID() || cur.Err() != nil {
		t.Fatalf("Session() after the loss: %v (err %v), want a live session with an id other than 0x%x", cur, cur.Err(), first.ID())
	}
	// "After a new session fn is called once, since anything may have
	// changed meanwhile."
	watch.await(t, "the watch resynchronised after the new session", func(evs []regcenter.Event) bool {
		return slices.ContainsFunc(evs, func(e regcenter.Event) bool { return e.Type == regcenter.EventResync })
	})
	from := watch.len()
	mustCreate(t, b, "/flag", nil, regcenter.Persistent)
	seenAfter(t, waitTimeout, watch, from, "the watch sees a create after the new session", func() (bool, string, error) {
		ok, _, err := a.Exists(ctx, "/flag")
		return ok, "/flag missing", err
	})
	// The center does not re-create ephemeral nodes; its user does, under
	// the new session.
	if exists(t, a, "/owned/eph") {
		t.Error("the center re-created an ephemeral node of the lost session")
	}
	mustCreate(t, a, "/owned/eph", []byte("again"), regcenter.Ephemeral)
	if _, st := mustGet(t, b, "/owned/eph"); st.EphemeralOwner != cur.ID() {
		t.Errorf("re-created ephemeral owner 0x%x, want the new session 0x%x", st.EphemeralOwner, cur.ID())
	}
}

// testStats: requests are counted by kind (a Multi is one, whatever its
// size), and answers callers expect, such as no node, are not errors.
func testStats(t testing.TB, s *suite) {
	c := s.center(t)
	ctx := ctxFor(t)
	mustCreate(t, c, "/st/a", []byte("x"), regcenter.Persistent)
	before := c.Stats()
	if _, _, err := c.Get(ctx, "/st/a"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Exists(ctx, "/st/a"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Children(ctx, "/st"); err != nil {
		t.Fatal(err)
	}
	reads := c.Stats().Sub(before)
	if _, err := c.Create(ctx, "/st/b", nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set(ctx, "/st/b", []byte("y"), -1); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, "/st/b", -1); err != nil {
		t.Fatal(err)
	}
	writes := c.Stats().Sub(before).Sub(reads)
	mark := c.Stats()
	ops := []regcenter.Op{regcenter.CheckOp{Path: "/st/a", Version: 0}}
	for i := range 20 {
		ops = append(ops, regcenter.CreateOp{Path: "/st/m" + string(rune('a'+i))})
	}
	if err := c.Multi(ctx, ops...); err != nil {
		t.Fatal(err)
	}
	multi := c.Stats().Sub(mark)
	mark = c.Stats()
	_, cancel, err := c.WatchNow(ctx, "/st/a", regcenter.WatchNode, func(regcenter.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	watch := c.Stats().Sub(mark)
	mark = c.Stats()
	if _, _, err := c.Get(ctx, "/st/missing"); !errors.Is(err, regcenter.ErrNoNode) {
		t.Fatalf("Get of a missing node: %v", err)
	}
	if _, err := c.Create(ctx, "/st/a", nil, regcenter.Persistent); !errors.Is(err, regcenter.ErrNodeExists) {
		t.Fatalf("Create of an existing node: %v", err)
	}
	if _, err := c.Set(ctx, "/st/a", nil, 9); !errors.Is(err, regcenter.ErrBadVersion) {
		t.Fatalf("Set at a stale version: %v", err)
	}
	answers := c.Stats().Sub(mark)
	total := c.Stats().Sub(before)

	if reads.Reads < 3 || reads.Writes != 0 || reads.Multis != 0 {
		t.Errorf("Get, Exists, Children counted as %+v, want at least 3 reads and nothing else", reads)
	}
	if writes.Writes < 3 || writes.Multis != 0 {
		t.Errorf("Create, Set, Delete counted as %+v, want at least 3 writes and no multis", writes)
	}
	if multi.Multis != 1 {
		t.Errorf("one Multi of %d ops counted as %+v, want exactly 1 multi", len(ops), multi)
	}
	if watch.Watches < 1 {
		t.Errorf("WatchNow counted as %+v, want at least 1 watch request", watch)
	}
	if answers.Total() < 3 || answers.Errors != 0 {
		t.Errorf("no node, node exists and bad version counted as %+v, want 3 requests and no errors", answers)
	}
	if total.Errors != 0 {
		t.Errorf("successful requests counted %d errors", total.Errors)
	}
	if sum := total.Reads + total.Writes + total.Multis + total.Watches; total.Total() != sum {
		t.Errorf("Total() = %d, want the sum of the kinds %d", total.Total(), sum)
	}
	t.Logf("requests: 3 reads %+v, 3 writes %+v, a Multi %+v, WatchNow %+v", reads, writes, multi, watch)
}
