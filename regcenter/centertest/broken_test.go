package centertest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/testing/leakcheck"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
)

var zk *zktest.Cluster

func TestMain(m *testing.M) { os.Exit(zktest.RunTests(leakcheck.Checked(m), &zk)) }

// fakeT records what a case reports instead of failing the test that runs
// it, so that a case can be run against a center that breaks the contract
// and be seen to fail. The embedded test serves everything else (Cleanup,
// Context, Log): centers a case makes are closed when that test ends.
type fakeT struct {
	testing.TB

	mu      sync.Mutex
	failed  bool
	skipped bool
	msgs    []string
}

func (f *fakeT) record(msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failed = true
	if msg != "" {
		f.msgs = append(f.msgs, msg)
	}
}

func (f *fakeT) Helper()                           {}
func (f *fakeT) Fail()                             { f.record("") }
func (f *fakeT) FailNow()                          { f.record(""); runtime.Goexit() }
func (f *fakeT) Error(args ...any)                 { f.record(fmt.Sprint(args...)) }
func (f *fakeT) Errorf(format string, args ...any) { f.record(fmt.Sprintf(format, args...)) }
func (f *fakeT) Fatal(args ...any)                 { f.record(fmt.Sprint(args...)); runtime.Goexit() }
func (f *fakeT) Fatalf(format string, args ...any) {
	f.record(fmt.Sprintf(format, args...))
	runtime.Goexit()
}
func (f *fakeT) Skip(args ...any)                 { f.skip() }
func (f *fakeT) Skipf(format string, args ...any) { f.skip() }
func (f *fakeT) SkipNow()                         { f.skip() }

func (f *fakeT) skip() {
	f.mu.Lock()
	f.skipped = true
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *fakeT) Failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

func (f *fakeT) Skipped() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.skipped
}

func (f *fakeT) report() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.msgs, "; ")
}

// runCase runs the named case against f on its own goroutine (a Fatal
// ends only that goroutine) and returns what it reported.
func runCase(t *testing.T, name string, f Factory) *fakeT {
	t.Helper()
	i := -1
	for j, c := range cases {
		if c.name == name {
			i = j
		}
	}
	if i < 0 {
		t.Fatalf("no case named %q", name)
	}
	ft := &fakeT{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		cases[i].fn(ft, &suite{f: f, ns: namespace()})
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("case %s did not end within 2m", name)
	}
	return ft
}

// wrapped returns f with every center it makes wrapped by wrap. Its
// ExpireSession expires the wrapped center's session.
func wrapped(f Factory, wrap func(regcenter.Center) regcenter.Center) Factory {
	var inner sync.Map // wrapper -> the center it wraps
	g := f
	g.New = func(tb testing.TB, namespace string) regcenter.Center {
		c := f.New(tb, namespace)
		w := wrap(c)
		inner.Store(w, c)
		return w
	}
	g.ExpireSession = func(tb testing.TB, w regcenter.Center) {
		c, ok := inner.Load(w)
		if !ok {
			tb.Fatalf("ExpireSession of a center the wrapped factory did not make")
		}
		f.ExpireSession(tb, c.(regcenter.Center))
	}
	g.Restart = nil
	return g
}

// TestSuiteFailsBrokenCenters runs cases against centers that break the
// contract the way registries have been seen to break it, and checks that
// each case fails, for the reason it names; and that the same case passes
// on the unbroken center, so the failure is the breakage's.
func TestSuiteFailsBrokenCenters(t *testing.T) {
	checkBrokenFail(t, ZooKeeperFactory(zk))
}

// checkBrokenFail runs the breakages against centers good makes, each
// case first on the unbroken center.
func checkBrokenFail(t *testing.T, good Factory) {
	for _, tc := range []struct {
		name  string // what the center gets wrong
		wrap  func(regcenter.Center) regcenter.Center
		cases map[string]string // that must fail, and what each must say
	}{
		{"children by key prefix", func(c regcenter.Center) regcenter.Center { return prefixTree{c} },
			map[string]string{"ChildrenAreDirectOnly": "want exactly [1 10]", "DeleteTree": "want [ab f]"}},
		{"Set ignores the version", func(c regcenter.Center) regcenter.Center { return setAnyVersion{c} },
			map[string]string{"SetAtVersion": "want ErrBadVersion"}},
		{"Multi ignores versions", func(c regcenter.Center) regcenter.Center { return multiAnyVersion{c} },
			map[string]string{"MultiConcurrentCheckAndSet": "updates were lost", "MultiIsAllOrNothing": "want it to fail at op 2"}},
		{"Multi applies ops one by one", func(c regcenter.Center) regcenter.Center { return multiOneByOne{c} },
			map[string]string{"MultiIsAllOrNothing": "the failed Multi created"}},
		{"sequence numbers from a counter in each process", func(c regcenter.Center) regcenter.Center { return &localSequence{Center: c} },
			map[string]string{"SequentialNodes": "node exists"}},
		{"ephemeral nodes created persistent", func(c regcenter.Center) regcenter.Center { return ephemeralPersistent{c} },
			map[string]string{"EphemeralGoneOnClose": "still exists after its center's Close", "StatOwnerAndZxids": "want the session's"}},
		{"cancel does not cancel", func(c regcenter.Center) regcenter.Center { return cancelNothing{c} },
			map[string]string{"WatchCancel": "after cancel"}},
		{"a children watch reports the node's own data", func(c regcenter.Center) regcenter.Center { return childrenSeeData{c} },
			map[string]string{"WatchChildrenDirectOnly": "only the child's create and delete"}},
		{"Session() keeps the first session", func(c regcenter.Center) regcenter.Center { return firstSession{c, c.Session()} },
			map[string]string{"SessionLoss": "want a live session"}},
		{"Stats counts nothing", func(c regcenter.Center) regcenter.Center { return noStats{c} },
			map[string]string{"Stats": "want at least 3 reads"}},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			for _, name := range slices.Sorted(maps.Keys(tc.cases)) {
				says := tc.cases[name]
				if ok := runCase(t, name, good); ok.Failed() || ok.Skipped() {
					t.Fatalf("case %s fails on the unbroken center: %s", name, ok.report())
				}
				bad := runCase(t, name, wrapped(good, tc.wrap))
				switch {
				case bad.Skipped():
					t.Errorf("case %s skipped a center whose %s", name, tc.name)
				case !bad.Failed():
					t.Errorf("case %s passes a center whose %s", name, tc.name)
				case !strings.Contains(bad.report(), says):
					t.Errorf("case %s failed, but without saying %q: %s", name, says, bad.report())
				default:
					t.Logf("case %s fails as it should: %s", name, bad.report())
				}
			}
		})
	}
}

// prefixTree lists and deletes by path prefix, as a key-value registry
// scanning keys by prefix does: /a/1 "has" /a/10 and /a/1/x as children,
// and deleting /a/1 deletes /a/10.
type prefixTree struct{ regcenter.Center }

// matches returns every node whose path starts with p (as a string),
// other than p, found by walking the real tree from p's parent.
func (c prefixTree) matches(ctx context.Context, p string) ([]string, error) {
	var out []string
	var walk func(dir string) error
	walk = func(dir string) error {
		kids, err := c.Center.Children(ctx, dir)
		if err != nil {
			return err
		}
		for _, k := range kids {
			full := path.Join(dir, k)
			if strings.HasPrefix(full, p) && full != p {
				out = append(out, full)
			}
			if strings.HasPrefix(full, p) || strings.HasPrefix(p, full+"/") {
				if err := walk(full); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return out, walk(path.Dir(p))
}

func (c prefixTree) Children(ctx context.Context, p string) ([]string, error) {
	if _, _, err := c.Center.Get(ctx, p); err != nil {
		return nil, err
	}
	if p == "/" {
		return c.Center.Children(ctx, p)
	}
	all, err := c.matches(ctx, p)
	var out []string
	for _, m := range all {
		out = append(out, strings.TrimPrefix(strings.TrimPrefix(m, p), "/"))
	}
	return out, err
}

func (c prefixTree) DeleteTree(ctx context.Context, p string) error {
	all, err := c.matches(ctx, p)
	if err != nil && !errors.Is(err, regcenter.ErrNoNode) {
		return err
	}
	for i := len(all) - 1; i >= 0; i-- { // deepest first, as walked
		if err := c.Center.DeleteTree(ctx, all[i]); err != nil {
			return err
		}
	}
	return c.Center.DeleteTree(ctx, p)
}

// setAnyVersion drops Set's version check.
type setAnyVersion struct{ regcenter.Center }

func (c setAnyVersion) Set(ctx context.Context, p string, data []byte, _ int32) (regcenter.Stat, error) {
	return c.Center.Set(ctx, p, data, -1)
}

// multiAnyVersion drops the version checks of a transaction's ops.
type multiAnyVersion struct{ regcenter.Center }

func (c multiAnyVersion) Multi(ctx context.Context, ops ...regcenter.Op) error {
	var out []regcenter.Op
	for _, op := range ops {
		switch o := op.(type) {
		case regcenter.SetOp:
			o.Version = -1
			op = o
		case regcenter.DeleteOp:
			o.Version = -1
			op = o
		case regcenter.CheckOp:
			continue
		}
		out = append(out, op)
	}
	return c.Center.Multi(ctx, out...)
}

// multiOneByOne applies a transaction's ops one request at a time,
// stopping at the first that fails.
type multiOneByOne struct{ regcenter.Center }

func (c multiOneByOne) Multi(ctx context.Context, ops ...regcenter.Op) error {
	for i, op := range ops {
		var err error
		switch o := op.(type) {
		case regcenter.CreateOp:
			_, err = c.Center.Create(ctx, o.Path, o.Data, o.Mode)
		case regcenter.SetOp:
			_, err = c.Center.Set(ctx, o.Path, o.Data, o.Version)
		case regcenter.DeleteOp:
			err = c.Center.Delete(ctx, o.Path, o.Version)
		case regcenter.CheckOp:
			var st regcenter.Stat
			if _, st, err = c.Center.Get(ctx, o.Path); err == nil && st.Version != o.Version {
				err = regcenter.ErrBadVersion
			}
		}
		if err != nil {
			return &regcenter.MultiError{Index: i, Op: op, Err: err}
		}
	}
	return nil
}

// localSequence numbers sequential nodes from a counter of its own, one
// per client.
type localSequence struct {
	regcenter.Center
	next atomic.Int64
}

func (c *localSequence) Create(ctx context.Context, p string, data []byte, mode regcenter.Mode) (string, error) {
	switch mode {
	case regcenter.PersistentSequential, regcenter.EphemeralSequential:
		n := c.next.Add(1) - 1
		m := regcenter.Persistent
		if mode == regcenter.EphemeralSequential {
			m = regcenter.Ephemeral
		}
		return c.Center.Create(ctx, fmt.Sprintf("%s%010d", p, n), data, m)
	}
	return c.Center.Create(ctx, p, data, mode)
}

// ephemeralPersistent creates ephemeral nodes as persistent ones.
type ephemeralPersistent struct{ regcenter.Center }

func (c ephemeralPersistent) Create(ctx context.Context, p string, data []byte, mode regcenter.Mode) (string, error) {
	switch mode {
	case regcenter.Ephemeral:
		mode = regcenter.Persistent
	case regcenter.EphemeralSequential:
		mode = regcenter.PersistentSequential
	}
	return c.Center.Create(ctx, p, data, mode)
}

// cancelNothing hands out cancel functions that do nothing.
type cancelNothing struct{ regcenter.Center }

func (c cancelNothing) Watch(p string, kind regcenter.WatchKind, fn func(regcenter.Event)) func() {
	c.Center.Watch(p, kind, fn)
	return func() {}
}

func (c cancelNothing) WatchNow(ctx context.Context, p string, kind regcenter.WatchKind, fn func(regcenter.Event)) (regcenter.WatchState, func(), error) {
	st, _, err := c.Center.WatchNow(ctx, p, kind, fn)
	return st, func() {}, err
}

// childrenSeeData reports a node's data changes to its children
// watches too, as a watch on a key and its prefix together does.
type childrenSeeData struct{ regcenter.Center }

func (c childrenSeeData) WatchNow(ctx context.Context, p string, kind regcenter.WatchKind, fn func(regcenter.Event)) (regcenter.WatchState, func(), error) {
	st, cancel, err := c.Center.WatchNow(ctx, p, kind, fn)
	if kind != regcenter.WatchChildren || err != nil {
		return st, cancel, err
	}
	_, cancelData, err := c.Center.WatchNow(ctx, p, regcenter.WatchNode, func(e regcenter.Event) {
		if e.Type == regcenter.EventDataChanged {
			fn(regcenter.Event{Type: regcenter.EventChildrenChanged, Path: p})
		}
	})
	return st, func() { cancel(); cancelData() }, err
}

// firstSession returns the session it was made with, even after that one
// is lost.
type firstSession struct {
	regcenter.Center
	first *regcenter.Session
}

func (c firstSession) Session() *regcenter.Session { return c.first }

// noStats counts nothing.
type noStats struct{ regcenter.Center }

func (noStats) Stats() regcenter.Stats { return regcenter.Stats{} }
