package centertest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/shardjob/shardjob/internal/parallel"
	"github.com/shardjob/shardjob/regcenter"
)

// testNoNode: reads and writes of a missing node fail with ErrNoNode;
// Exists says false without an error.
func testNoNode(t testing.TB, s *suite) {
	c := s.center(t)
	ctx := ctxFor(t)
	if _, _, err := c.Get(ctx, "/missing"); !errors.Is(err, regcenter.ErrNoNode) {
		t.Errorf("Get of a missing node: %v, want ErrNoNode", err)
	}
	if ok, _, err := c.Exists(ctx, "/missing"); ok || err != nil {
		t.Errorf("Exists of a missing node: %v, %v; want false, nil", ok, err)
	}
	if _, err := c.Children(ctx, "/missing"); !errors.Is(err, regcenter.ErrNoNode) {
		t.Errorf("Children of a missing node: %v, want ErrNoNode", err)
	}
	if _, err := c.Set(ctx, "/missing", []byte("x"), -1); !errors.Is(err, regcenter.ErrNoNode) {
		t.Errorf("Set of a missing node: %v, want ErrNoNode", err)
	}
	if err := c.Delete(ctx, "/missing", -1); !errors.Is(err, regcenter.ErrNoNode) {
		t.Errorf("Delete of a missing node: %v, want ErrNoNode", err)
	}
	if _, _, err := c.Get(ctx, "/missing/below"); !errors.Is(err, regcenter.ErrNoNode) {
		t.Errorf("Get below a missing node: %v, want ErrNoNode", err)
	}
	if ok := exists(t, c, "/missing"); ok {
		t.Error("a failed Set or Delete created the node")
	}
}

// testNodeExists: creating a node that exists fails with ErrNodeExists and
// leaves it as it was.
func testNodeExists(t testing.TB, s *suite) {
	c := s.center(t)
	ctx := ctxFor(t)
	mustCreate(t, c, "/n", []byte("first"), regcenter.Persistent)
	for _, mode := range []regcenter.Mode{regcenter.Persistent, regcenter.Ephemeral} {
		if _, err := c.Create(ctx, "/n", []byte("second"), mode); !errors.Is(err, regcenter.ErrNodeExists) {
			t.Errorf("Create (mode %d) of an existing node: %v, want ErrNodeExists", mode, err)
		}
	}
	data, st := mustGet(t, c, "/n")
	if string(data) != "first" || st.Version != 0 || st.EphemeralOwner != 0 {
		t.Errorf("after refused creates: data %s version %d owner 0x%x, want \"first\", 0, 0", quote(data), st.Version, st.EphemeralOwner)
	}
}

// testCreateMakesParents: Create makes missing parents as empty persistent
// nodes and returns the path it created.
func testCreateMakesParents(t testing.TB, s *suite) {
	c := s.center(t)
	if got := mustCreate(t, c, "/p/q/r", []byte("leaf"), regcenter.Persistent); got != "/p/q/r" {
		t.Errorf("Create returned %q, want /p/q/r", got)
	}
	if got := mustCreate(t, c, "/e/f/eph", nil, regcenter.Ephemeral); got != "/e/f/eph" {
		t.Errorf("Create returned %q, want /e/f/eph", got)
	}
	for _, p := range []string{"/p", "/p/q", "/e", "/e/f"} {
		data, st := mustGet(t, c, p)
		if len(data) != 0 || st.EphemeralOwner != 0 {
			t.Errorf("parent %s: data %s owner 0x%x, want an empty persistent node", p, quote(data), st.EphemeralOwner)
		}
	}
	if data, _ := mustGet(t, c, "/p/q/r"); string(data) != "leaf" {
		t.Errorf("/p/q/r holds %s, want \"leaf\"", quote(data))
	}
	if kids := mustChildren(t, c, "/p"); !slices.Equal(kids, []string{"q"}) {
		t.Errorf("Children(/p) = %v, want [q]", kids)
	}
	if kids := mustChildren(t, c, "/"); !sameSet(kids, []string{"p", "e"}) {
		t.Errorf("Children(/) = %v, want [e p]", kids)
	}
}

// testEnsurePath: EnsurePath creates a path and its parents, and calling it
// again, or on a path that exists, changes nothing.
func testEnsurePath(t testing.TB, s *suite) {
	c := s.center(t)
	ctx := ctxFor(t)
	if err := c.EnsurePath(ctx, "/x/y/z"); err != nil {
		t.Fatalf("EnsurePath: %v", err)
	}
	for _, p := range []string{"/x", "/x/y", "/x/y/z"} {
		if !exists(t, c, p) {
			t.Errorf("EnsurePath did not create %s", p)
		}
	}
	if _, err := c.Set(ctx, "/x/y", []byte("kept"), -1); err != nil {
		t.Fatal(err)
	}
	_, before := mustGet(t, c, "/x/y/z")
	for range 2 {
		if err := c.EnsurePath(ctx, "/x/y/z"); err != nil {
			t.Fatalf("EnsurePath of an existing path: %v", err)
		}
	}
	if err := c.EnsurePath(ctx, "/x/y"); err != nil {
		t.Fatalf("EnsurePath of an existing parent: %v", err)
	}
	if data, st := mustGet(t, c, "/x/y"); string(data) != "kept" || st.Version != 1 {
		t.Errorf("EnsurePath changed an existing node: data %s version %d, want \"kept\" 1", quote(data), st.Version)
	}
	if _, after := mustGet(t, c, "/x/y/z"); after.Czxid != before.Czxid || after.Version != before.Version {
		t.Errorf("EnsurePath re-created or changed /x/y/z: %+v, was %+v", after, before)
	}
	if kids := mustChildren(t, c, "/x/y"); !slices.Equal(kids, []string{"z"}) {
		t.Errorf("Children(/x/y) = %v, want [z]", kids)
	}
}

// testSetVersion: Set at a stale version fails with ErrBadVersion and
// writes nothing; at the current version or -1 it writes and returns the
// new stat.
func testSetVersion(t testing.TB, s *suite) {
	c := s.center(t)
	ctx := ctxFor(t)
	mustCreate(t, c, "/v", []byte("v0"), regcenter.Persistent)
	st, err := c.Set(ctx, "/v", []byte("v1"), 0)
	if err != nil {
		t.Fatalf("Set at the current version 0: %v", err)
	}
	if st.Version != 1 {
		t.Errorf("Set returned version %d, want 1", st.Version)
	}
	for _, stale := range []int32{0, 2, 7} {
		if _, err := c.Set(ctx, "/v", []byte("stale"), stale); !errors.Is(err, regcenter.ErrBadVersion) {
			t.Errorf("Set at version %d when the node is at 1: %v, want ErrBadVersion", stale, err)
		}
	}
	if data, st := mustGet(t, c, "/v"); string(data) != "v1" || st.Version != 1 {
		t.Fatalf("after refused Sets: data %s version %d, want \"v1\" 1", quote(data), st.Version)
	}
	st, err = c.Set(ctx, "/v", []byte("any"), -1)
	if err != nil {
		t.Fatalf("Set at -1: %v", err)
	}
	if st.Version != 2 {
		t.Errorf("Set at -1 returned version %d, want 2", st.Version)
	}
	if data, got := mustGet(t, c, "/v"); string(data) != "any" || got.Version != 2 || got.Mzxid != st.Mzxid {
		t.Errorf("after Set at -1: data %s version %d mzxid %d, want \"any\" 2 %d", quote(data), got.Version, got.Mzxid, st.Mzxid)
	}
}

// testDeleteVersion: Delete at a stale version fails with ErrBadVersion and
// keeps the node; at the current version or -1 it deletes.
func testDeleteVersion(t testing.TB, s *suite) {
	c := s.center(t)
	ctx := ctxFor(t)
	mustCreate(t, c, "/d1", nil, regcenter.Persistent)
	mustCreate(t, c, "/d2", nil, regcenter.Persistent)
	if _, err := c.Set(ctx, "/d1", []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, "/d1", 0); !errors.Is(err, regcenter.ErrBadVersion) {
		t.Errorf("Delete at stale version 0: %v, want ErrBadVersion", err)
	}
	if !exists(t, c, "/d1") {
		t.Fatal("a Delete at a stale version deleted the node")
	}
	if err := c.Delete(ctx, "/d1", 1); err != nil {
		t.Errorf("Delete at the current version 1: %v", err)
	}
	if err := c.Delete(ctx, "/d2", -1); err != nil {
		t.Errorf("Delete at -1: %v", err)
	}
	for _, p := range []string{"/d1", "/d2"} {
		if exists(t, c, p) {
			t.Errorf("%s still exists after Delete", p)
		}
	}
}

// testDeleteNotEmpty: Delete of a node with children fails with
// ErrNotEmpty and deletes nothing.
func testDeleteNotEmpty(t testing.TB, s *suite) {
	c := s.center(t)
	ctx := ctxFor(t)
	mustCreate(t, c, "/parent/child", nil, regcenter.Persistent)
	for _, v := range []int32{-1, 0} {
		if err := c.Delete(ctx, "/parent", v); !errors.Is(err, regcenter.ErrNotEmpty) {
			t.Errorf("Delete (version %d) of a node with a child: %v, want ErrNotEmpty", v, err)
		}
	}
	if !exists(t, c, "/parent/child") || !exists(t, c, "/parent") {
		t.Error("a refused Delete removed something")
	}
}

// testDeleteTree: DeleteTree removes a node and everything below it, and
// nothing beside it; a missing node is not an error.
func testDeleteTree(t testing.TB, s *suite) {
	c := s.center(t)
	ctx := ctxFor(t)
	for _, p := range []string{"/t/a/b/c", "/t/a/b/d", "/t/a/e", "/t/ab", "/t/f"} {
		mustCreate(t, c, p, []byte(p), regcenter.Persistent)
	}
	if err := c.DeleteTree(ctx, "/t/a"); err != nil {
		t.Fatalf("DeleteTree(/t/a): %v", err)
	}
	for _, p := range []string{"/t/a", "/t/a/b", "/t/a/b/c", "/t/a/e"} {
		if exists(t, c, p) {
			t.Errorf("%s survived DeleteTree(/t/a)", p)
		}
	}
	if kids := mustChildren(t, c, "/t"); !sameSet(kids, []string{"ab", "f"}) {
		t.Errorf("Children(/t) after DeleteTree(/t/a) = %v, want [ab f]", kids)
	}
	if err := c.DeleteTree(ctx, "/t/missing"); err != nil {
		t.Errorf("DeleteTree of a missing node: %v, want nil", err)
	}
	if err := c.DeleteTree(ctx, "/t/f"); err != nil {
		t.Errorf("DeleteTree of a leaf: %v", err)
	}
	if err := c.DeleteTree(ctx, "/t"); err != nil {
		t.Errorf("DeleteTree(/t): %v", err)
	}
	if exists(t, c, "/t") || exists(t, c, "/t/ab") {
		t.Error("/t survived DeleteTree(/t)")
	}
}

// testChildrenDirectOnly: Children lists direct children, never a prefix
// match (/a/1 is not a parent of /a/10, /a is not a parent of /ab), and
// deleting one subtree leaves its prefix-sharing siblings.
func testChildrenDirectOnly(t testing.TB, s *suite) {
	c := s.center(t)
	ctx := ctxFor(t)
	for _, p := range []string{"/a/1", "/a/10", "/a/1/x", "/ab", "/a/1/x/y"} {
		mustCreate(t, c, p, nil, regcenter.Persistent)
	}
	check := func(p string, want []string) {
		t.Helper()
		if kids := mustChildren(t, c, p); !sameSet(kids, want) {
			t.Errorf("Children(%s) = %v, want exactly %v", p, sorted(kids), want)
		}
	}
	check("/a", []string{"1", "10"})
	check("/a/1", []string{"x"})
	check("/a/10", []string{})
	check("/", []string{"a", "ab"})
	if _, st := mustGet(t, c, "/a"); st.NumChildren != 2 {
		t.Errorf("Stat(/a).NumChildren = %d, want 2", st.NumChildren)
	}
	if err := c.Delete(ctx, "/a/1", -1); !errors.Is(err, regcenter.ErrNotEmpty) {
		t.Errorf("Delete(/a/1) with a child: %v, want ErrNotEmpty", err)
	}
	if err := c.DeleteTree(ctx, "/a/1"); err != nil {
		t.Fatalf("DeleteTree(/a/1): %v", err)
	}
	check("/a", []string{"10"})
	if !exists(t, c, "/a/10") || !exists(t, c, "/ab") {
		t.Error("DeleteTree(/a/1) removed /a/10 or /ab")
	}
	if err := c.Delete(ctx, "/a/10", -1); err != nil {
		t.Errorf("Delete(/a/10), a leaf: %v", err)
	}
	check("/a", []string{})
}

// manyChildren is how many children TenThousandChildren creates, and
// perMulti how many it creates per transaction (etcd allows 128 operations
// per transaction by default).
const (
	manyChildren = 10_000
	perMulti     = 50
)

// testManyChildren: a node with 10,000 children lists them all in one call
// that costs a request or two, not one per child.
func testManyChildren(t testing.TB, s *suite) {
	c := s.center(t)
	ctx := ctxFor(t)
	mustCreate(t, c, "/wide", nil, regcenter.Persistent)
	var mu sync.Mutex
	var errs []error
	parallel.Each(manyChildren/perMulti, 4, func(b int) {
		ops := make([]regcenter.Op, perMulti)
		for i := range ops {
			ops[i] = regcenter.CreateOp{Path: fmt.Sprintf("/wide/c%05d", b*perMulti+i)}
		}
		if err := c.Multi(ctx, ops...); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	})
	if len(errs) > 0 {
		t.Fatalf("creating %d children in transactions of %d: %d failed, first: %v", manyChildren, perMulti, len(errs), errs[0])
	}
	before := c.Stats()
	kids, err := c.Children(ctx, "/wide")
	if err != nil {
		t.Fatalf("Children of a node with %d children: %v", manyChildren, err)
	}
	d := c.Stats().Sub(before)
	if len(kids) != manyChildren {
		t.Fatalf("Children listed %d, want %d", len(kids), manyChildren)
	}
	seen := make(map[string]bool, len(kids))
	for _, k := range kids {
		if seen[k] {
			t.Fatalf("Children listed %q twice", k)
		}
		seen[k] = true
	}
	for i := 0; i < manyChildren; i += 997 {
		if k := fmt.Sprintf("c%05d", i); !seen[k] {
			t.Fatalf("Children is missing %q", k)
		}
	}
	if d.Total() < 1 || d.Total() > 2 {
		t.Errorf("one Children call of %d children cost %d requests (%+v), want 1 or 2", manyChildren, d.Total(), d)
	}
	if _, st := mustGet(t, c, "/wide"); st.NumChildren != manyChildren {
		t.Errorf("NumChildren = %d, want %d", st.NumChildren, manyChildren)
	}
}

// testNamespaces: a center sees only its own namespace, even when another
// namespace's name starts with it.
func testNamespaces(t testing.TB, s *suite) {
	a := s.center(t)
	b := s.f.New(t, s.ns+"0")
	mustCreate(t, a, "/mine", []byte("a"), regcenter.Persistent)
	mustCreate(t, b, "/theirs", []byte("b"), regcenter.Persistent)
	mustCreate(t, b, "/mine", []byte("b"), regcenter.Persistent)
	if kids := mustChildren(t, a, "/"); !slices.Equal(kids, []string{"mine"}) {
		t.Errorf("namespace %s lists %v, want [mine]", s.ns, kids)
	}
	if data, _ := mustGet(t, a, "/mine"); string(data) != "a" {
		t.Errorf("namespace %s reads %s at /mine, want \"a\"", s.ns, quote(data))
	}
	if err := a.DeleteTree(ctxFor(t), "/mine"); err != nil {
		t.Fatalf("DeleteTree(/mine): %v", err)
	}
	if kids := mustChildren(t, b, "/"); !sameSet(kids, []string{"mine", "theirs"}) {
		t.Errorf("namespace %s0 lists %v after %s deleted its /mine, want [mine theirs]", s.ns, kids, s.ns)
	}
	if data, _ := mustGet(t, b, "/mine"); string(data) != "b" {
		t.Errorf("namespace %s0 reads %s at /mine, want \"b\"", s.ns, quote(data))
	}
}

// testStatVersions: Version counts data changes; CVersion counts changes to
// the list of children (a child's create and delete, not its data);
// NumChildren and DataLength follow.
func testStatVersions(t testing.TB, s *suite) {
	c := s.center(t)
	ctx := ctxFor(t)
	mustCreate(t, c, "/s", []byte("abc"), regcenter.Persistent)
	_, st := mustGet(t, c, "/s")
	if st.Version != 0 || st.NumChildren != 0 || st.DataLength != 3 {
		t.Errorf("new node: version %d children %d length %d, want 0 0 3", st.Version, st.NumChildren, st.DataLength)
	}
	cv0 := st.CVersion
	for i := int32(1); i <= 3; i++ {
		got, err := c.Set(ctx, "/s", bytes.Repeat([]byte("z"), int(i)), -1)
		if err != nil {
			t.Fatal(err)
		}
		if got.Version != i || got.DataLength != i {
			t.Errorf("Set number %d returned version %d length %d, want %d %d", i, got.Version, got.DataLength, i, i)
		}
	}
	if _, st = mustGet(t, c, "/s"); st.CVersion != cv0 {
		t.Errorf("setting data changed CVersion %d -> %d", cv0, st.CVersion)
	}
	mustCreate(t, c, "/s/k", nil, regcenter.Persistent)
	_, st = mustGet(t, c, "/s")
	cv1 := st.CVersion
	if cv1 == cv0 || st.NumChildren != 1 || st.Version != 3 {
		t.Errorf("after a child's create: cversion %d (was %d) children %d version %d, want a new cversion, 1 child, version 3", cv1, cv0, st.NumChildren, st.Version)
	}
	if _, err := c.Set(ctx, "/s/k", []byte("child data"), -1); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, c, "/s/k/grandchild", nil, regcenter.Persistent)
	if _, st = mustGet(t, c, "/s"); st.CVersion != cv1 || st.NumChildren != 1 {
		t.Errorf("a child's data set or a grandchild changed the parent: cversion %d (was %d) children %d", st.CVersion, cv1, st.NumChildren)
	}
	if err := c.DeleteTree(ctx, "/s/k"); err != nil {
		t.Fatal(err)
	}
	if _, st = mustGet(t, c, "/s"); st.CVersion == cv1 || st.NumChildren != 0 || st.Version != 3 {
		t.Errorf("after the child's delete: cversion %d (was %d) children %d version %d, want a new cversion, 0, 3", st.CVersion, cv1, st.NumChildren, st.Version)
	}
	ok, est, err := c.Exists(ctx, "/s")
	if err != nil || !ok || !sameStat(est, st) {
		t.Errorf("Exists stat %+v (%v, %v), want Get's %+v", est, ok, err, st)
	}
}

// testCVersionCountsEveryChild: CVersion grows by one for every child
// created or deleted, several in one Multi included, and not for data; the
// parent's Ctime stays. A node deleted and created again starts over at a
// new node's CVersion.
func testCVersionCountsEveryChild(t testing.TB, s *suite) {
	c := s.center(t)
	ctx := ctxFor(t)
	mustCreate(t, c, "/cv", nil, regcenter.Persistent)
	mustCreate(t, c, "/other", nil, regcenter.Persistent)
	_, st := mustGet(t, c, "/cv")
	cv0, ctime := st.CVersion, st.Ctime
	steps := []struct {
		what  string
		do    func() error
		delta int32
	}{
		{"a child's create", func() error { _, err := c.Create(ctx, "/cv/a", nil, regcenter.Persistent); return err }, 1},
		{"a Multi creating two children", func() error {
			return c.Multi(ctx, regcenter.CreateOp{Path: "/cv/b"}, regcenter.CreateOp{Path: "/cv/c", Mode: regcenter.Ephemeral})
		}, 3},
		{"a Multi creating a child here and one elsewhere", func() error {
			return c.Multi(ctx, regcenter.CreateOp{Path: "/cv/d"}, regcenter.CreateOp{Path: "/other/d"})
		}, 4},
		{"a child's data set", func() error { _, err := c.Set(ctx, "/cv/a", []byte("x"), -1); return err }, 4},
		{"the node's own data set", func() error { _, err := c.Set(ctx, "/cv", []byte("x"), 0); return err }, 4},
		{"a child's delete", func() error { return c.Delete(ctx, "/cv/a", -1) }, 5},
		{"a Multi deleting a child and creating another", func() error {
			return c.Multi(ctx, regcenter.DeleteOp{Path: "/cv/b", Version: -1}, regcenter.CreateOp{Path: "/cv/e"})
		}, 7},
		{"a Multi deleting two children", func() error {
			return c.Multi(ctx, regcenter.DeleteOp{Path: "/cv/c", Version: -1}, regcenter.DeleteOp{Path: "/cv/d", Version: 0})
		}, 9},
	}
	for _, step := range steps {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.what, err)
		}
		_, st := mustGet(t, c, "/cv")
		if st.CVersion != cv0+step.delta || !st.Ctime.Equal(ctime) {
			t.Errorf("after %s: CVersion %d Ctime %v, want %d and %v", step.what, st.CVersion, st.Ctime, cv0+step.delta, ctime)
		}
	}
	if err := c.DeleteTree(ctx, "/cv"); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, c, "/cv", nil, regcenter.Persistent)
	if _, st := mustGet(t, c, "/cv"); st.CVersion != cv0 || st.Version != 0 || st.NumChildren != 0 {
		t.Errorf("/cv created again: CVersion %d version %d children %d, want a new node's %d, 0, 0", st.CVersion, st.Version, st.NumChildren, cv0)
	}
}

// testStatOwnerAndZxids: EphemeralOwner is the session id for ephemeral
// nodes and 0 for persistent ones; Czxid < Mzxid after a Set; a later
// create has a larger Czxid.
func testStatOwnerAndZxids(t testing.TB, s *suite) {
	c := s.center(t)
	ctx := ctxFor(t)
	mustCreate(t, c, "/p", nil, regcenter.Persistent)
	mustCreate(t, c, "/e", nil, regcenter.Ephemeral)
	es := mustCreate(t, c, "/es-", nil, regcenter.EphemeralSequential)
	id := c.Session().ID()
	if id == 0 {
		t.Error("Session().ID() is 0")
	}
	if _, st := mustGet(t, c, "/p"); st.EphemeralOwner != 0 {
		t.Errorf("persistent node's EphemeralOwner = 0x%x, want 0", st.EphemeralOwner)
	}
	for _, p := range []string{"/e", es} {
		if _, st := mustGet(t, c, p); st.EphemeralOwner != id {
			t.Errorf("ephemeral %s's EphemeralOwner = 0x%x, want the session's 0x%x", p, st.EphemeralOwner, id)
		}
	}
	_, p0 := mustGet(t, c, "/p")
	if p0.Czxid != p0.Mzxid {
		t.Errorf("new node: Czxid %d != Mzxid %d", p0.Czxid, p0.Mzxid)
	}
	set, err := c.Set(ctx, "/p", []byte("x"), -1)
	if err != nil {
		t.Fatal(err)
	}
	if set.Czxid != p0.Czxid || set.Mzxid <= set.Czxid {
		t.Errorf("after Set: Czxid %d Mzxid %d (created at %d), want Czxid unchanged < Mzxid", set.Czxid, set.Mzxid, p0.Czxid)
	}
	mustCreate(t, c, "/later", nil, regcenter.Persistent)
	_, later := mustGet(t, c, "/later")
	if later.Czxid <= set.Mzxid {
		t.Errorf("a later create has Czxid %d, not after the earlier Set's Mzxid %d", later.Czxid, set.Mzxid)
	}
}

// testStatTimes: Ctime and Mtime are set (the scheduler measures its clock
// against Mtime; the console shows both), Ctime stays and Mtime does not go
// back when the data is set.
func testStatTimes(t testing.TB, s *suite) {
	c := s.center(t)
	mustCreate(t, c, "/t", nil, regcenter.Persistent)
	_, created := mustGet(t, c, "/t")
	if created.Ctime.IsZero() || created.Mtime.IsZero() || !created.Mtime.Equal(created.Ctime) {
		t.Errorf("new node: Ctime %v Mtime %v, want both set and equal", created.Ctime, created.Mtime)
	}
	set, err := c.Set(ctxFor(t), "/t", []byte("x"), -1)
	if err != nil {
		t.Fatal(err)
	}
	if !set.Ctime.Equal(created.Ctime) || set.Mtime.Before(created.Mtime) {
		t.Errorf("after Set: Ctime %v Mtime %v, want Ctime %v kept and Mtime not before %v", set.Ctime, set.Mtime, created.Ctime, created.Mtime)
	}
}

// testTooLarge: Create, Set and Multi past the write limit fail with
// ErrTooLarge and write nothing; a write of exactly the limit succeeds.
func testTooLarge(t testing.TB, s *suite) {
	c := s.center(t)
	ctx := ctxFor(t)
	limit := s.f.maxNodeBytes()
	over := bytes.Repeat([]byte("o"), limit+1)
	mustCreate(t, c, "/big", []byte("small"), regcenter.Persistent)
	if _, err := c.Create(ctx, "/big2", over, regcenter.Persistent); !errors.Is(err, regcenter.ErrTooLarge) {
		t.Errorf("Create of %d bytes (limit %d): %v, want ErrTooLarge", len(over), limit, err)
	}
	if _, err := c.Set(ctx, "/big", over, -1); !errors.Is(err, regcenter.ErrTooLarge) {
		t.Errorf("Set of %d bytes (limit %d): %v, want ErrTooLarge", len(over), limit, err)
	}
	err := c.Multi(ctx, regcenter.CreateOp{Path: "/big3"}, regcenter.SetOp{Path: "/big", Data: over, Version: -1})
	if !errors.Is(err, regcenter.ErrTooLarge) {
		t.Errorf("Multi with a %d-byte Set (limit %d): %v, want ErrTooLarge", len(over), limit, err)
	}
	// Writes that fit one by one may not fit together.
	third := bytes.Repeat([]byte("t"), limit/3+1)
	err = c.Multi(ctx, regcenter.CreateOp{Path: "/m1", Data: third}, regcenter.CreateOp{Path: "/m2", Data: third}, regcenter.CreateOp{Path: "/m3", Data: third})
	if !errors.Is(err, regcenter.ErrTooLarge) {
		t.Errorf("Multi of three writes of %d bytes (limit %d): %v, want ErrTooLarge", len(third), limit, err)
	}
	if data, st := mustGet(t, c, "/big"); string(data) != "small" || st.Version != 0 {
		t.Errorf("refused writes changed /big: %s version %d", quote(data), st.Version)
	}
	for _, p := range []string{"/big2", "/big3", "/m1", "/m2", "/m3"} {
		if exists(t, c, p) {
			t.Errorf("a refused write created %s", p)
		}
	}
	full := bytes.Repeat([]byte("f"), limit)
	if _, err := c.Create(ctx, "/full", full, regcenter.Persistent); err != nil {
		t.Fatalf("Create of exactly the limit, %d bytes: %v", limit, err)
	}
	if _, err := c.Set(ctx, "/full", full, -1); err != nil {
		t.Errorf("Set of exactly the limit, %d bytes: %v", limit, err)
	}
	if data, _ := mustGet(t, c, "/full"); !bytes.Equal(data, full) {
		t.Errorf("read back %d bytes, want %d", len(data), len(full))
	}
}

// sameStat reports whether a and b describe the same state of a node.
func sameStat(a, b regcenter.Stat) bool {
	return a.Version == b.Version && a.CVersion == b.CVersion && a.EphemeralOwner == b.EphemeralOwner &&
		a.Czxid == b.Czxid && a.Mzxid == b.Mzxid && a.Ctime.Equal(b.Ctime) && a.Mtime.Equal(b.Mtime) &&
		a.NumChildren == b.NumChildren && a.DataLength == b.DataLength
}

// testGetMany: GetMany answers every path, in order, as Get would (data
// and stat; a missing node, or one below a missing parent, absent rather
// than an error), in one read for a few paths, and across as many
// requests as a long list needs, still in order.
func testGetMany(t testing.TB, s *suite) {
	c := s.center(t)
	ctx := ctxFor(t)
	mustCreate(t, c, "/gm/a", []byte("first"), regcenter.Persistent)
	if _, err := c.Set(ctx, "/gm/a", []byte("second"), 0); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, c, "/gm/a/kid", nil, regcenter.Persistent)
	mustCreate(t, c, "/gm/empty", nil, regcenter.Persistent)
	mustCreate(t, c, "/gm/eph", []byte("mine"), regcenter.Ephemeral)
	if got, err := c.GetMany(ctx); err != nil || len(got) != 0 {
		t.Errorf("GetMany of no path: %v, %v; want none", got, err)
	}
	paths := []string{"/gm/a", "/gm/missing", "/gm/empty", "/gm/eph", "/nope/below", "/gm/a/kid", "/gm/a"}
	before := c.Stats()
	got, err := c.GetMany(ctx, paths...)
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Stats().Sub(before); d.Reads != 1 || d.Total() != 1 {
		t.Errorf("GetMany of %d paths sent %+v, want one read", len(paths), d)
	}
	if len(got) != len(paths) {
		t.Fatalf("GetMany of %d paths answered %d", len(paths), len(got))
	}
	for i, p := range paths {
		data, st, err := c.Get(ctx, p)
		switch {
		case errors.Is(err, regcenter.ErrNoNode):
			if got[i].Exists {
				t.Errorf("%s: GetMany says it exists (%s), Get says no node", p, quote(got[i].Data))
			}
		case err != nil:
			t.Fatal(err)
		case !got[i].Exists:
			t.Errorf("%s: GetMany says absent, Get read %s", p, quote(data))
		case !bytes.Equal(got[i].Data, data):
			t.Errorf("%s: GetMany read %s, Get %s", p, quote(got[i].Data), quote(data))
		case !sameStat(got[i].Stat, st):
			t.Errorf("%s: GetMany's stat %+v, Get's %+v", p, got[i].Stat, st)
		}
	}
	if got[0].Stat.Version != 1 || got[0].Stat.NumChildren != 1 || got[3].Stat.EphemeralOwner == 0 {
		t.Errorf("stats %+v, %+v: want version 1 with a child, and an ephemeral owner", got[0].Stat, got[3].Stat)
	}

	// More paths than any backend sends in one request: every answer in
	// its place.
	var ops []regcenter.Op
	for i := range 10 {
		ops = append(ops, regcenter.CreateOp{Path: fmt.Sprintf("/gm/many-%d", i), Data: []byte{byte('0' + i)}})
	}
	if err := c.Multi(ctx, ops...); err != nil {
		t.Fatal(err)
	}
	paths = paths[:0]
	for i := range 2500 {
		paths = append(paths, fmt.Sprintf("/gm/many-%d", i%20))
	}
	got, err = c.GetMany(ctx, paths...)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(paths) {
		t.Fatalf("GetMany of %d paths answered %d", len(paths), len(got))
	}
	for i, n := range got {
		if want := i%20 < 10; n.Exists != want || (want && string(n.Data) != string(rune('0'+i%20))) {
			t.Fatalf("GetMany's answer %d (%s): exists=%v %s, want exists=%v", i, paths[i], n.Exists, quote(n.Data), want)
		}
	}
}
