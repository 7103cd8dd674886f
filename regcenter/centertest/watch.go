package centertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

// expectEvents waits for the recorder to hold exactly len(want) events and
// fails tb unless they are want, in order, all for path.
func expectEvents(tb testing.TB, r *recorder[regcenter.Event], path, what string, want ...regcenter.EventType) {
	tb.Helper()
	got := r.awaitN(tb, len(want), what)
	if !slices.Equal(types(got), want) {
		tb.Fatalf("%s: events %v, want %v", what, types(got), want)
	}
	for _, e := range got {
		if e.Path != path {
			tb.Fatalf("%s: event %v names path %q, want %q", what, e.Type, e.Path, path)
		}
	}
}

// watchNow arms a watch with WatchNow, failing tb if it cannot, and
// cancels it when tb ends.
func watchNow(tb testing.TB, c regcenter.Center, p string, kind regcenter.WatchKind, r *recorder[regcenter.Event]) regcenter.WatchState {
	tb.Helper()
	st, cancel, err := c.WatchNow(ctxFor(tb), p, kind, r.add)
	if cancel != nil {
		tb.Cleanup(cancel)
	}
	if err != nil {
		tb.Fatalf("WatchNow(%s): %v", p, err)
	}
	return st
}

// testWatchResyncFirst: Watch calls fn with EventResync once the watch is
// armed (so a caller re-reads after it is in place), then with changes.
func testWatchResyncFirst(t testing.TB, s *suite) {
	a, b := s.center(t), s.center(t)
	node, kids := newRecorder[regcenter.Event](), newRecorder[regcenter.Event]()
	defer a.Watch("/f", regcenter.WatchNode, node.add)()
	defer a.Watch("/g", regcenter.WatchChildren, kids.add)()
	expectEvents(t, node, "/f", "node watch armed", regcenter.EventResync)
	expectEvents(t, kids, "/g", "children watch armed", regcenter.EventResync)
	mustCreate(t, b, "/f", nil, regcenter.Persistent)
	expectEvents(t, node, "/f", "node created after Watch", regcenter.EventResync, regcenter.EventCreated)
	mustCreate(t, b, "/g", nil, regcenter.Persistent)
	kids.awaitN(t, 2, "children watch sees its node created")
	from := kids.len()
	mustCreate(t, b, "/g/k", nil, regcenter.Persistent)
	expectEvents(t, kids, "/g", "child created after Watch", append(types(kids.all()[:from]), regcenter.EventChildrenChanged)...)
}

// testWatchNodeInOrder: a node watch sees the node created, its data set
// and the node deleted, in order, each once, whichever client writes.
func testWatchNodeInOrder(t testing.TB, s *suite) {
	a, b := s.center(t), s.center(t)
	ctx := ctxFor(t)
	ev := newRecorder[regcenter.Event]()
	if st := watchNow(t, a, "/w", regcenter.WatchNode, ev); st.Exists {
		t.Fatalf("WatchNow of a missing node: %+v", st)
	}
	var want []regcenter.EventType
	step := func(what string, typ regcenter.EventType, do func() error) {
		t.Helper()
		if err := do(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		want = append(want, typ)
		expectEvents(t, ev, "/w", what, want...)
	}
	step("create", regcenter.EventCreated, func() error { _, err := b.Create(ctx, "/w", []byte("0"), regcenter.Persistent); return err })
	step("set", regcenter.EventDataChanged, func() error { _, err := b.Set(ctx, "/w", []byte("1"), -1); return err })
	step("set by the watcher", regcenter.EventDataChanged, func() error { _, err := a.Set(ctx, "/w", []byte("2"), 1); return err })
	step("set of the same data", regcenter.EventDataChanged, func() error { _, err := b.Set(ctx, "/w", []byte("2"), -1); return err })
	step("delete", regcenter.EventDeleted, func() error { return b.Delete(ctx, "/w", -1) })
	step("create again", regcenter.EventCreated, func() error { _, err := b.Create(ctx, "/w", nil, regcenter.Ephemeral); return err })
	step("the owner's close deletes", regcenter.EventDeleted, b.Close)
}

// testWatchChildren: a children watch sees a direct child created and
// deleted, and the node deleted; not a child's data set, a grandchild, a
// sibling or the node's own data.
//
// A children event says nothing of what changed, so an extra one can only
// be told by counting: the case ends with the node's deletion, an event of
// another type, and checks that exactly the child's create and delete came
// before it.
func testWatchChildren(t testing.TB, s *suite) {
	a, b := s.center(t), s.center(t)
	ctx := ctxFor(t)
	mustCreate(t, b, "/p", nil, regcenter.Persistent)
	mustCreate(t, b, "/p0", nil, regcenter.Persistent)
	ev := newRecorder[regcenter.Event]()
	st := watchNow(t, a, "/p", regcenter.WatchChildren, ev)
	if !st.Exists || len(st.Children) != 0 {
		t.Fatalf("WatchNow state %+v, want existing with no children", st)
	}
	mustCreate(t, b, "/p/b", nil, regcenter.Persistent)
	expectEvents(t, ev, "/p", "child created", regcenter.EventChildrenChanged)
	// None of these change /p's list of children.
	if _, err := b.Set(ctx, "/p/b", []byte("child data"), -1); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, b, "/p/b/grandchild", nil, regcenter.Persistent)
	if err := b.Delete(ctx, "/p/b/grandchild", -1); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, b, "/p0/other", nil, regcenter.Persistent)
	mustCreate(t, b, "/p1", nil, regcenter.Persistent)
	if _, err := b.Set(ctx, "/p", []byte("own data"), -1); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, "/p/b", -1); err != nil {
		t.Fatal(err)
	}
	ev.awaitN(t, 2, "child deleted")
	if err := b.Delete(ctx, "/p", -1); err != nil {
		t.Fatal(err)
	}
	got := ev.await(t, "the watched node deleted", func(evs []regcenter.Event) bool {
		return slices.ContainsFunc(evs, func(e regcenter.Event) bool { return e.Type == regcenter.EventDeleted })
	})
	want := []regcenter.EventType{regcenter.EventChildrenChanged, regcenter.EventChildrenChanged, regcenter.EventDeleted}
	if !slices.Equal(types(got), want) {
		t.Fatalf("events %v, want %v: only the child's create and delete change the list of children, not a child's data, a grandchild, a sibling or the node's own data", types(got), want)
	}
}

// testWatchChildrenMissing: a children watch on a missing node sees it
// created, then its children change.
func testWatchChildrenMissing(t testing.TB, s *suite) {
	a, b := s.center(t), s.center(t)
	ev := newRecorder[regcenter.Event]()
	if st := watchNow(t, a, "/q", regcenter.WatchChildren, ev); st.Exists || len(st.Children) != 0 {
		t.Fatalf("WatchNow of a missing node: %+v", st)
	}
	mustCreate(t, b, "/q", nil, regcenter.Persistent)
	expectEvents(t, ev, "/q", "the watched node created", regcenter.EventCreated)
	mustCreate(t, b, "/q/c", nil, regcenter.Persistent)
	expectEvents(t, ev, "/q", "a child of the created node", regcenter.EventCreated, regcenter.EventChildrenChanged)
	if kids := mustChildren(t, a, "/q"); !slices.Equal(kids, []string{"c"}) {
		t.Errorf("Children(/q) = %v, want [c]", kids)
	}
}

// testWatchCancel: after cancel returns fn is not called again, other
// subscribers of the same path keep theirs, cancelling twice is harmless,
// and a path whose last subscriber cancelled can be watched again.
func testWatchCancel(t testing.TB, s *suite) {
	a, b := s.center(t), s.center(t)
	ctx := ctxFor(t)
	mustCreate(t, b, "/c/k", nil, regcenter.Persistent)
	mustCreate(t, b, "/c2", nil, regcenter.Persistent)
	gone, stays := newRecorder[regcenter.Event](), newRecorder[regcenter.Event]()
	kidsGone, kidsStay := newRecorder[regcenter.Event](), newRecorder[regcenter.Event]()
	_, cancelGone, err := a.WatchNow(ctx, "/c", regcenter.WatchNode, gone.add)
	if err != nil {
		t.Fatal(err)
	}
	watchNow(t, a, "/c", regcenter.WatchNode, stays)
	_, cancelKids, err := a.WatchNow(ctx, "/c", regcenter.WatchChildren, kidsGone.add)
	if err != nil {
		t.Fatal(err)
	}
	watchNow(t, a, "/c", regcenter.WatchChildren, kidsStay)
	if _, err := b.Set(ctx, "/c", []byte("1"), -1); err != nil {
		t.Fatal(err)
	}
	expectEvents(t, gone, "/c", "before cancel", regcenter.EventDataChanged)
	expectEvents(t, stays, "/c", "before cancel", regcenter.EventDataChanged)
	cancelGone()
	cancelKids()
	cancelGone()
	cancelKids()
	for i := 2; i <= 3; i++ {
		if _, err := b.Set(ctx, "/c", []byte(strconv.Itoa(i)), -1); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, b, fmt.Sprintf("/c/k%d", i), nil, regcenter.Persistent)
		stays.awaitN(t, i, "the remaining node subscriber sees the change")
		kidsStay.awaitN(t, i-1, "the remaining children subscriber sees the change")
	}
	if n := gone.len(); n != 1 {
		t.Errorf("cancelled node watch called %d times after cancel: %v", n-1, types(gone.all()[1:]))
	}
	if n := kidsGone.len(); n != 0 {
		t.Errorf("cancelled children watch called %d times after cancel: %v", n, types(kidsGone.all()))
	}

	first, again := newRecorder[regcenter.Event](), newRecorder[regcenter.Event]()
	_, cancelFirst, err := a.WatchNow(ctx, "/c2", regcenter.WatchChildren, first.add)
	if err != nil {
		t.Fatal(err)
	}
	cancelFirst()
	watchNow(t, a, "/c2", regcenter.WatchChildren, again)
	mustCreate(t, b, "/c2/k", nil, regcenter.Persistent)
	expectEvents(t, again, "/c2", "watching again after the only subscriber cancelled", regcenter.EventChildrenChanged)
	if n := first.len(); n != 0 {
		t.Errorf("cancelled children watch called %d times: %v", n, types(first.all()))
	}
}

// testWatchNow: WatchNow returns the state it read (no resync follows) and
// then reports every later change.
func testWatchNow(t testing.TB, s *suite) {
	a, b := s.center(t), s.center(t)
	ctx := ctxFor(t)
	mustCreate(t, b, "/n", []byte("v"), regcenter.Persistent)
	if _, err := b.Set(ctx, "/n", []byte("vv"), -1); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, b, "/d/a", nil, regcenter.Persistent)
	mustCreate(t, b, "/d/b", nil, regcenter.Persistent)
	_, want := mustGet(t, b, "/n")

	node, kids := newRecorder[regcenter.Event](), newRecorder[regcenter.Event]()
	st := watchNow(t, a, "/n", regcenter.WatchNode, node)
	if !st.Exists || !sameStat(st.Stat, want) {
		t.Errorf("WatchNow(/n) state %+v, want existing with stat %+v", st, want)
	}
	st = watchNow(t, a, "/d", regcenter.WatchChildren, kids)
	if !st.Exists || !sameSet(st.Children, []string{"a", "b"}) {
		t.Errorf("WatchNow(/d) state %+v, want existing with children [a b]", st)
	}
	var wantNode, wantKids []regcenter.EventType
	for i := range 5 {
		if _, err := b.Set(ctx, "/n", []byte(strconv.Itoa(i)), -1); err != nil {
			t.Fatal(err)
		}
		wantNode = append(wantNode, regcenter.EventDataChanged)
		expectEvents(t, node, "/n", fmt.Sprintf("set %d after WatchNow", i), wantNode...)
		mustCreate(t, b, fmt.Sprintf("/d/c%d", i), nil, regcenter.Persistent)
		wantKids = append(wantKids, regcenter.EventChildrenChanged)
		expectEvents(t, kids, "/d", fmt.Sprintf("child %d after WatchNow", i), wantKids...)
	}
}

// restartTimeout bounds the waits after a restart of every server: a
// client may have to wait out its session timeout and then open a new
// session, on a machine slowed by the servers' start.
const restartTimeout = time.Minute

// retryWrite repeats write until it succeeds (a server may still be coming
// back), each try bounded, failing tb after restartTimeout.
func retryWrite(tb testing.TB, what string, write func(ctx context.Context) error) {
	tb.Helper()
	eventuallyWithin(tb, restartTimeout, what, func() (bool, string) {
		ctx, cancel := context.WithTimeout(tb.Context(), 5*time.Second)
		defer cancel()
		if err := write(ctx); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// testWatchAcrossRestart: no change is lost across a restart of every
// server: a change made while the watcher may still be reconnecting is
// reported (by its event or a resync), and every change after it is too.
func testWatchAcrossRestart(t testing.TB, s *suite) {
	s.needRestart(t)
	a, b := s.center(t), s.center(t)
	mustCreate(t, b, "/r", []byte("0"), regcenter.Persistent)
	mustCreate(t, b, "/rd/c0", nil, regcenter.Persistent)
	node, kids := newRecorder[regcenter.Event](), newRecorder[regcenter.Event]()
	watchNow(t, a, "/r", regcenter.WatchNode, node)
	watchNow(t, a, "/rd", regcenter.WatchChildren, kids)

	s.f.Restart(t)

	// Each re-read has a deadline of its own: the waits after a restart
	// may be long.
	dataIs := func(want string) func() (bool, string, error) {
		return func() (bool, string, error) {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			data, _, err := a.Get(ctx, "/r")
			return string(data) == want, "/r = " + quote(data), err
		}
	}
	kidsAre := func(want ...string) func() (bool, string, error) {
		return func() (bool, string, error) {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			got, err := a.Children(ctx, "/rd")
			return sameSet(got, want), "children " + joined(sorted(got)), err
		}
	}
	set := func(v string) func(context.Context) error {
		return func(ctx context.Context) error { _, err := b.Set(ctx, "/r", []byte(v), -1); return err }
	}
	create := func(p string) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := b.Create(ctx, p, nil, regcenter.Persistent)
			if errors.Is(err, regcenter.ErrNodeExists) { // an earlier try that lost its answer
				return nil
			}
			return err
		}
	}
	retryWrite(t, "set /r after the restart", set("1"))
	retryWrite(t, "create /rd/c1 after the restart", create("/rd/c1"))
	seenAfter(t, restartTimeout, node, 0, "the node watch reports the set made as the servers came back", dataIs("1"))
	seenAfter(t, restartTimeout, kids, 0, "the children watch reports the child created as the servers came back", kidsAre("c0", "c1"))
	names := []string{"c0", "c1"}
	for i := 2; i <= 4; i++ {
		from := node.len()
		retryWrite(t, "set /r", set(strconv.Itoa(i)))
		seenAfter(t, restartTimeout, node, from, fmt.Sprintf("set %d after the restart", i), dataIs(strconv.Itoa(i)))
		from = kids.len()
		names = append(names, fmt.Sprintf("c%d", i))
		retryWrite(t, "create a child", create("/rd/"+names[len(names)-1]))
		seenAfter(t, restartTimeout, kids, from, fmt.Sprintf("child %d after the restart", i), kidsAre(names...))
	}
	for _, e := range node.all() {
		if e.Type == regcenter.EventChildrenChanged || e.Path != "/r" {
			t.Errorf("node watch on /r got %v for %q", e.Type, e.Path)
		}
	}
	for _, e := range kids.all() {
		if e.Type == regcenter.EventDataChanged || e.Path != "/rd" {
			t.Errorf("children watch on /rd got %v for %q", e.Type, e.Path)
		}
	}
	t.Logf("events across the restart: node %v, children %v", types(node.all()), types(kids.all()))
}
