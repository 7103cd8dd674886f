package regcenter_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

// gated holds the first Multi sent through it until release is closed,
// so that the calls made meanwhile queue up behind it: the test decides
// what a group holds instead of the scheduler's timing.
type gated struct {
	regcenter.Center
	once    sync.Once
	started chan struct{}
	release chan struct{}
}

func (g *gated) Multi(ctx context.Context, ops ...regcenter.Op) error {
	first := false
	g.once.Do(func() { first = true })
	if first {
		close(g.started)
		<-g.release
	}
	return g.Center.Multi(ctx, ops...)
}

func newGated(z regcenter.Center) *gated {
	return &gated{Center: z, started: make(chan struct{}), release: make(chan struct{})}
}

// waitQueued waits until n calls wait in g's queue.
func waitQueued(t *testing.T, g regcenter.Center, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for regcenter.QueuedMultis(g) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls queued after 10s, want %d", regcenter.QueuedMultis(g), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func runConcurrently(n int, f func(i int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	return errs
}

func TestGroupCommitSendsCallsMadeMeanwhileAsOneTransaction(t *testing.T) {
	z := connect(t)
	c := ctx(t)
	gate := newGated(z)
	g := regcenter.GroupCommit(gate)
	if regcenter.GroupCommit(g) != g {
		t.Error("GroupCommit of a group commit wraps it again")
	}
	firstDone := make(chan error, 1)
	go func() { firstDone <- g.Multi(c, regcenter.CreateOp{Path: "/first"}) }()
	<-gate.started
	before := z.Stats()
	const n = 20
	results := make(chan []error, 1)
	go func() {
		results <- runConcurrently(n, func(i int) error {
			return g.Multi(c, regcenter.CreateOp{Path: fmt.Sprintf("/n%d", i)}, regcenter.CreateOp{Path: fmt.Sprintf("/n%d/child", i)})
		})
	}()
	waitQueued(t, g, n)
	close(gate.release)
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	for i, err := range <-results {
		if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	if d := z.Stats().Sub(before); d.Multis != 2 {
		t.Errorf("%d transactions for the first call and %d made while it was in flight, want 2", d.Multis, n)
	}
	for i := range n {
		if ok, _, err := z.Exists(c, fmt.Sprintf("/n%d/child", i)); err != nil || !ok {
			t.Errorf("/n%d/child: exists=%v err=%v", i, ok, err)
		}
	}
}

// A group that fails on one call's op applies nothing of itself; each call
// is then sent alone, so the others apply and the failing one gets the
// error a Multi of its own ops gives: the index within its ops.
func TestGroupCommitFailureIsTheFailingCallsAlone(t *testing.T) {
	z := connect(t)
	c := ctx(t)
	if _, err := z.Create(c, "/taken", nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	gate := newGated(z)
	g := regcenter.GroupCommit(gate)
	firstDone := make(chan error, 1)
	go func() { firstDone <- g.Multi(c, regcenter.CreateOp{Path: "/first"}) }()
	<-gate.started
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i, ops := range [][]regcenter.Op{
		{regcenter.CreateOp{Path: "/a"}},
		{regcenter.CreateOp{Path: "/b"}, regcenter.CreateOp{Path: "/taken"}},
		{regcenter.CreateOp{Path: "/c"}},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = g.Multi(c, ops...)
		}()
	}
	waitQueued(t, g, 3)
	close(gate.release)
	wg.Wait()
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	var me *regcenter.MultiError
	if !errors.As(errs[1], &me) || me.Index != 1 || !errors.Is(errs[1], regcenter.ErrNodeExists) {
		t.Errorf("the failing call got %v, want a MultiError at its op 1 wrapping ErrNodeExists", errs[1])
	}
	for _, i := range []int{0, 2} {
		if errs[i] != nil {
			t.Errorf("call %d failed with the group: %v", i, errs[i])
		}
	}
	for path, want := range map[string]bool{"/a": true, "/c": true, "/b": false} {
		if ok, _, err := z.Exists(c, path); err != nil || ok != want {
			t.Errorf("%s exists=%v (err %v), want %v", path, ok, err, want)
		}
	}
}

// A call whose context ends while it waits returns at once, and its ops
// are never sent; the calls behind it still go.
func TestGroupCommitCallAbandonedWhileQueuedIsNotSent(t *testing.T) {
	z := connect(t)
	c := ctx(t)
	gate := newGated(z)
	g := regcenter.GroupCommit(gate)
	firstDone := make(chan error, 1)
	go func() { firstDone <- g.Multi(c, regcenter.CreateOp{Path: "/first"}) }()
	<-gate.started
	short, cancel := context.WithCancel(c)
	abandoned := make(chan error, 1)
	go func() { abandoned <- g.Multi(short, regcenter.CreateOp{Path: "/abandoned"}) }()
	waitQueued(t, g, 1)
	later := make(chan error, 1)
	go func() { later <- g.Multi(c, regcenter.CreateOp{Path: "/later"}) }()
	waitQueued(t, g, 2)
	cancel()
	if err := <-abandoned; !errors.Is(err, context.Canceled) {
		t.Errorf("abandoned call returned %v, want context.Canceled", err)
	}
	close(gate.release)
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	if err := <-later; err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := z.Exists(c, "/abandoned"); ok {
		t.Error("the abandoned call's op was applied")
	}
	if ok, _, _ := z.Exists(c, "/later"); !ok {
		t.Error("the call behind the abandoned one was not applied")
	}
}
