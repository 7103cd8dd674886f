package centertest

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/shardjob/shardjob/regcenter"
)

// testMultiApplies: a Multi applies every op, in order (a node created and
// then set in one transaction), and counts as one request carrying its
// writes (a check is none); an empty Multi does nothing.
func testMultiApplies(t testing.TB, s *suite) {
	c := s.center(t)
	ctx := ctxFor(t)
	for _, p := range []string{"/ma/x", "/ma/gone", "/ma/kept"} {
		mustCreate(t, c, p, []byte("old"), regcenter.Persistent)
	}
	if err := c.Multi(ctx); err != nil {
		t.Errorf("empty Multi: %v", err)
	}
	before := c.Stats()
	err := c.Multi(ctx,
		regcenter.CheckOp{Path: "/ma/kept", Version: 0},
		regcenter.CreateOp{Path: "/ma/new", Data: []byte("n")},
		regcenter.SetOp{Path: "/ma/x", Data: []byte("s"), Version: 0},
		regcenter.DeleteOp{Path: "/ma/gone", Version: 0},
		regcenter.CreateOp{Path: "/ma/eph", Mode: regcenter.Ephemeral},
		regcenter.SetOp{Path: "/ma/new", Data: []byte("n2"), Version: 0},
	)
	if err != nil {
		t.Fatalf("Multi: %v", err)
	}
	if d := c.Stats().Sub(before); d.WriteOps != 5 || d.Multis != 1 {
		t.Errorf("a Multi of a check and five writes counted %d write ops in %d multis, want 5 in 1", d.WriteOps, d.Multis)
	}
	want := map[string]string{"/ma/new": "n2", "/ma/x": "s", "/ma/kept": "old", "/ma/eph": ""}
	for p, w := range want {
		if data, _ := mustGet(t, c, p); string(data) != w {
			t.Errorf("%s holds %s after the Multi, want %q", p, quote(data), w)
		}
	}
	if _, st := mustGet(t, c, "/ma/new"); st.Version != 1 {
		t.Errorf("/ma/new created and set in one Multi has version %d, want 1", st.Version)
	}
	if _, st := mustGet(t, c, "/ma/eph"); st.EphemeralOwner != c.Session().ID() {
		t.Errorf("ephemeral created by Multi has owner 0x%x, want 0x%x", st.EphemeralOwner, c.Session().ID())
	}
	if exists(t, c, "/ma/gone") {
		t.Error("/ma/gone survived the Multi that deleted it")
	}
}

// testMultiRecreate: a Multi may delete a node and create it again: the
// new node starts over (version 0, a new Czxid) with the new data, and its
// own ephemeral owner.
func testMultiRecreate(t testing.TB, s *suite) {
	c := s.center(t)
	ctx := ctxFor(t)
	mustCreate(t, c, "/r", []byte("old"), regcenter.Persistent)
	if _, err := c.Set(ctx, "/r", []byte("older"), -1); err != nil {
		t.Fatal(err)
	}
	_, before := mustGet(t, c, "/r")
	err := c.Multi(ctx, regcenter.DeleteOp{Path: "/r", Version: before.Version}, regcenter.CreateOp{Path: "/r", Data: []byte("new"), Mode: regcenter.Ephemeral})
	if err != nil {
		t.Fatalf("Multi deleting /r and creating it again: %v", err)
	}
	data, st := mustGet(t, c, "/r")
	if string(data) != "new" || st.Version != 0 || st.Czxid <= before.Czxid || st.EphemeralOwner != c.Session().ID() {
		t.Errorf("re-created /r: data %s version %d czxid %d (was %d) owner 0x%x; want \"new\", 0, a new czxid, owner 0x%x",
			quote(data), st.Version, st.Czxid, before.Czxid, st.EphemeralOwner, c.Session().ID())
	}
}

// testMultiAtomic: a Multi whose third op fails writes nothing and returns
// a *MultiError with Index 2 and that op, wrapping the op's sentinel. The
// ops around the failing one are siblings in one layout and each under a
// parent of its own in the other (a backend may send the two differently:
// etcd checks ops that touch distinct nodes inside the transaction itself).
func testMultiAtomic(t testing.TB, s *suite) {
	c := s.center(t)
	ctx := ctxFor(t)
	cases := []struct {
		name string
		op   func(base string) regcenter.Op
		want error // nil: any error (ZooKeeper's own, for a child of an ephemeral node)
	}{
		{"create of an existing node", func(b string) regcenter.Op { return regcenter.CreateOp{Path: b + "/exists"} }, regcenter.ErrNodeExists},
		{"create under a missing parent", func(b string) regcenter.Op { return regcenter.CreateOp{Path: b + "/missing/child"} }, regcenter.ErrNoNode},
		{"create under an ephemeral node", func(b string) regcenter.Op { return regcenter.CreateOp{Path: b + "/eph/child"} }, nil},
		{"set at a stale version", func(b string) regcenter.Op { return regcenter.SetOp{Path: b + "/exists", Version: 9} }, regcenter.ErrBadVersion},
		{"set of a missing node", func(b string) regcenter.Op { return regcenter.SetOp{Path: b + "/missing", Version: -1} }, regcenter.ErrNoNode},
		{"delete at a stale version", func(b string) regcenter.Op { return regcenter.DeleteOp{Path: b + "/exists", Version: 9} }, regcenter.ErrBadVersion},
		{"delete of a missing node", func(b string) regcenter.Op { return regcenter.DeleteOp{Path: b + "/missing", Version: -1} }, regcenter.ErrNoNode},
		{"delete of a node with children", func(b string) regcenter.Op { return regcenter.DeleteOp{Path: b + "/parent", Version: -1} }, regcenter.ErrNotEmpty},
		{"check at a stale version", func(b string) regcenter.Op { return regcenter.CheckOp{Path: b + "/exists", Version: 9} }, regcenter.ErrBadVersion},
		{"check of a missing node", func(b string) regcenter.Op { return regcenter.CheckOp{Path: b + "/missing", Version: 0} }, regcenter.ErrNoNode},
	}
	for _, layout := range []string{"siblings", "spread"} {
		for i, tc := range cases {
			base := fmt.Sprintf("/%s%d", layout, i)
			mustCreate(t, c, base+"/x", []byte("orig"), regcenter.Persistent)
			mustCreate(t, c, base+"/exists", []byte("e"), regcenter.Persistent)
			mustCreate(t, c, base+"/parent/child", nil, regcenter.Persistent)
			mustCreate(t, c, base+"/eph", nil, regcenter.Ephemeral)
			new1, new2 := base+"/new1", base+"/new2"
			if layout == "spread" {
				new1, new2 = base+"/p1/new1", base+"/p2/new2"
				mustCreate(t, c, base+"/p1", nil, regcenter.Persistent)
				mustCreate(t, c, base+"/p2", nil, regcenter.Persistent)
			}
			ops := []regcenter.Op{
				regcenter.CreateOp{Path: new1, Data: []byte("1")},
				regcenter.SetOp{Path: base + "/x", Data: []byte("changed"), Version: -1},
				tc.op(base),
				regcenter.CreateOp{Path: new2, Data: []byte("2")},
			}
			name := layout + ": " + tc.name
			err := c.Multi(ctx, ops...)
			var me *regcenter.MultiError
			switch {
			case err == nil:
				t.Errorf("%s: Multi succeeded, want it to fail at op 2", name)
			case !errors.As(err, &me):
				t.Errorf("%s: Multi error %v is not a *MultiError", name, err)
			case me.Index != 2 || me.Op == nil || me.Op.String() != ops[2].String():
				t.Errorf("%s: MultiError names op %d (%v), want op 2 (%v)", name, me.Index, me.Op, ops[2])
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Errorf("%s: Multi error %v does not wrap %v", name, err, tc.want)
			}
			for _, p := range []string{new1, new2, base + "/eph/child"} {
				if exists(t, c, p) {
					t.Errorf("%s: the failed Multi created %s", name, p)
				}
			}
			if data, st := mustGet(t, c, base+"/x"); string(data) != "orig" || st.Version != 0 {
				t.Errorf("%s: the failed Multi set %s/x to %s (version %d)", name, base, quote(data), st.Version)
			}
			if !exists(t, c, base+"/exists") || !exists(t, c, base+"/parent/child") {
				t.Errorf("%s: the failed Multi deleted something", name)
			}
		}
	}
}

// testMultiRecreateVersions: a node a Multi deleted and created again
// counts its versions from 0, not from the old node's: a check, set or
// delete at a version only the old node's count would reach fails with
// ErrBadVersion, and at the new node's own versions succeeds.
func testMultiRecreateVersions(t testing.TB, s *suite) {
	c := s.center(t)
	ctx := ctxFor(t)
	mustCreate(t, c, "/rv", []byte("a"), regcenter.Persistent)
	for range 2 {
		if _, err := c.Set(ctx, "/rv", []byte("b"), -1); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Multi(ctx, regcenter.DeleteOp{Path: "/rv", Version: 2}, regcenter.CreateOp{Path: "/rv", Data: []byte("new")}); err != nil {
		t.Fatalf("Multi deleting /rv and creating it again: %v", err)
	}
	// The old node was at version 2 after 3 writes: a count of writes to
	// the path, not to the node, would say 3 now.
	for _, v := range []int32{2, 3} {
		if err := c.Multi(ctx, regcenter.CheckOp{Path: "/rv", Version: v}); !errors.Is(err, regcenter.ErrBadVersion) {
			t.Errorf("check of the re-created /rv at version %d: %v, want ErrBadVersion", v, err)
		}
		if _, err := c.Set(ctx, "/rv", []byte("stale"), v); !errors.Is(err, regcenter.ErrBadVersion) {
			t.Errorf("set of the re-created /rv at version %d: %v, want ErrBadVersion", v, err)
		}
	}
	if err := c.Multi(ctx, regcenter.CheckOp{Path: "/rv", Version: 0}); err != nil {
		t.Errorf("check of the re-created /rv at version 0: %v", err)
	}
	st, err := c.Set(ctx, "/rv", []byte("next"), 0)
	if err != nil || st.Version != 1 {
		t.Fatalf("set of the re-created /rv at version 0: version %d, %v; want version 1", st.Version, err)
	}
	if _, st = mustGet(t, c, "/rv"); st.Version != 1 {
		t.Errorf("re-created /rv after one set: version %d, want 1", st.Version)
	}
	if err := c.Delete(ctx, "/rv", 4); !errors.Is(err, regcenter.ErrBadVersion) {
		t.Errorf("delete of /rv at version 4: %v, want ErrBadVersion", err)
	}
	if err := c.Delete(ctx, "/rv", 1); err != nil {
		t.Errorf("delete of /rv at its version 1: %v", err)
	}
}

// Concurrent check-and-set: writers on two clients, each attempting
// casAttempts read-then-Multi increments of one counter.
const (
	casWriters  = 4 // per client
	casAttempts = 25
)

// testMultiConcurrent: check-and-set Multis from concurrent writers on two
// clients never lose an update: the counter ends at the number of Multis
// that succeeded, each of which also wrote its own log node, and every
// Multi that failed failed on the version.
func testMultiConcurrent(t testing.TB, s *suite) {
	clients := []regcenter.Center{s.center(t), s.center(t)}
	ctx := ctxFor(t)
	mustCreate(t, clients[0], "/ctr", []byte("0"), regcenter.Persistent)
	mustCreate(t, clients[0], "/log", nil, regcenter.Persistent)
	var (
		mu        sync.Mutex
		successes int
		conflicts int
		failures  []error
	)
	var wg sync.WaitGroup
	for ci, c := range clients {
		for w := range casWriters {
			wg.Go(func() {
				for i := range casAttempts {
					data, st, err := c.Get(ctx, "/ctr")
					if err != nil {
						mu.Lock()
						failures = append(failures, err)
						mu.Unlock()
						return
					}
					n, err := strconv.Atoi(string(data))
					if err != nil {
						mu.Lock()
						failures = append(failures, fmt.Errorf("counter holds %s: %w", quote(data), err))
						mu.Unlock()
						return
					}
					err = c.Multi(ctx,
						regcenter.CheckOp{Path: "/ctr", Version: st.Version},
						regcenter.SetOp{Path: "/ctr", Data: []byte(strconv.Itoa(n + 1)), Version: st.Version},
						regcenter.CreateOp{Path: fmt.Sprintf("/log/c%d-w%d-%03d", ci, w, i), Data: []byte(strconv.Itoa(n + 1))},
					)
					mu.Lock()
					switch {
					case err == nil:
						successes++
					case errors.Is(err, regcenter.ErrBadVersion):
						conflicts++
					default:
						failures = append(failures, err)
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d requests failed other than on the version; first: %v", len(failures), failures[0])
	}
	data, st := mustGet(t, clients[1], "/ctr")
	got, err := strconv.Atoi(string(data))
	if err != nil {
		t.Fatalf("counter holds %s", quote(data))
	}
	if got != successes || int(st.Version) != successes {
		t.Errorf("counter %d at version %d after %d successful check-and-set Multis (and %d conflicts): updates were lost", got, st.Version, successes, conflicts)
	}
	logs := mustChildren(t, clients[1], "/log")
	if len(logs) != successes {
		t.Errorf("%d log nodes after %d successful Multis: a Multi was applied in part", len(logs), successes)
	}
	if successes == 0 {
		t.Error("no Multi succeeded")
	}
	t.Logf("%d writers on 2 clients: %d increments, %d conflicts", 2*casWriters, successes, conflicts)
}

// Sequential creators: two clients, seqCreators goroutines each, every
// goroutine creating seqPerCreator nodes one after another.
const (
	seqCreators   = 50 // per client
	seqPerCreator = 3
)

var seqSuffix = regexp.MustCompile(`^[0-9]{10}$`)

// suffix returns the sequence number of a sequential node created as
// prefix, failing tb unless it is ten digits.
func suffix(tb testing.TB, got, prefix string) int64 {
	tb.Helper()
	sfx, ok := strings.CutPrefix(got, prefix)
	if !ok || !seqSuffix.MatchString(sfx) {
		tb.Fatalf("sequential node created as %q is %q: want %q and a 10-digit suffix", prefix, got, prefix)
	}
	n, err := strconv.ParseInt(sfx, 10, 64)
	if err != nil {
		tb.Fatalf("suffix of %q: %v", got, err)
	}
	return n
}

// testSequential: sequential nodes get a 10-digit suffix that is unique and
// increasing across two clients creating at the same time, and a node
// created after another (on any client) has a larger one.
func testSequential(t testing.TB, s *suite) {
	a, b := s.center(t), s.center(t)
	ctx := ctxFor(t)
	mustCreate(t, a, "/seq", nil, regcenter.Persistent)
	type result struct {
		paths []string
		err   error
	}
	results := make([][]result, 2)
	var wg sync.WaitGroup
	for ci, c := range []regcenter.Center{a, b} {
		results[ci] = make([]result, seqCreators)
		for g := range seqCreators {
			wg.Go(func() {
				r := &results[ci][g]
				for range seqPerCreator {
					got, err := c.Create(ctx, "/seq/n-", []byte(fmt.Sprintf("c%d-g%d", ci, g)), regcenter.PersistentSequential)
					if err != nil {
						r.err = err
						return
					}
					r.paths = append(r.paths, got)
				}
			})
		}
	}
	wg.Wait()
	seen := map[int64]string{}
	var names []string
	for ci := range results {
		for g, r := range results[ci] {
			if r.err != nil {
				t.Fatalf("client %d creator %d: Create: %v", ci, g, r.err)
			}
			prev := int64(-1)
			for _, p := range r.paths {
				n := suffix(t, p, "/seq/n-")
				if n <= prev {
					t.Errorf("client %d creator %d: %s after a node numbered %d: not increasing", ci, g, p, prev)
				}
				if other, dup := seen[n]; dup {
					t.Errorf("sequence number %d given twice: %s and %s", n, other, p)
				}
				seen[n], prev = p, n
				names = append(names, strings.TrimPrefix(p, "/seq/"))
			}
		}
	}
	if kids := mustChildren(t, b, "/seq"); !sameSet(kids, names) {
		t.Errorf("Children(/seq) lists %d nodes, the creators were given %d, or they differ", len(kids), len(names))
	}
	// One after the other, across clients: the later is larger.
	last := slices.Max(slices.Collect(maps.Keys(seen)))
	for i, c := range []regcenter.Center{a, b, a} {
		got := mustCreate(t, c, "/seq/n-", nil, regcenter.PersistentSequential)
		n := suffix(t, got, "/seq/n-")
		if n <= last {
			t.Errorf("create %d (after every earlier one returned) got %d, not above %d", i, n, last)
		}
		last = n
	}
	// Ephemeral sequential nodes have the suffix and the owner.
	got := mustCreate(t, a, "/eseq/e-", nil, regcenter.EphemeralSequential)
	suffix(t, got, "/eseq/e-")
	if _, st := mustGet(t, b, got); st.EphemeralOwner != a.Session().ID() {
		t.Errorf("ephemeral sequential %s has owner 0x%x, want 0x%x", got, st.EphemeralOwner, a.Session().ID())
	}
}
