package etcd_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/etcdtest"
)

// TestEtcdNewTreesReadOnlyTheirParents: a transaction that makes new
// trees reads the parents it creates under, not its new nodes, and still
// names the op that fails when a node it took to be new exists.
func TestEtcdNewTreesReadOnlyTheirParents(t *testing.T) {
	cluster := etcdtest.Start(t)
	c := newEtcdCenter(t, cluster, regcenter.Config{Namespace: "newtrees"})
	ctx := testCtx(t)
	if err := c.EnsurePath(ctx, "/t"); err != nil {
		t.Fatal(err)
	}
	var ops []regcenter.Op
	for i := range 50 {
		p := fmt.Sprintf("/t/j%d", i)
		ops = append(ops, regcenter.CreateOp{Path: p}, regcenter.CreateOp{Path: p + "/config", Data: []byte("c")},
			regcenter.CreateOp{Path: p + "/servers"}, regcenter.CreateOp{Path: p + "/servers/me", Mode: regcenter.Ephemeral})
	}
	s0 := c.Stats()
	if err := c.Multi(ctx, ops...); err != nil {
		t.Fatal(err)
	}
	if d := c.Stats().Sub(s0); d.Reads != 1 || d.Multis != 1 {
		t.Fatalf("200 creates in 50 new trees: %d reads and %d transactions, want 1 and 1", d.Reads, d.Multis)
	}
	if kids, err := c.Children(ctx, "/t"); err != nil || len(kids) != 50 {
		t.Fatalf("children of /t: %d, %v", len(kids), err)
	}
	if _, st, err := c.Get(ctx, "/t"); err != nil || st.CVersion != 50 {
		t.Fatalf("cversion of /t: %d, %v; want 50", st.CVersion, err)
	}

	// Guessed wrong: the op that fails is named as on ZooKeeper, also
	// when a later op would fail on what was read.
	for _, tc := range []struct {
		ops   []regcenter.Op
		index int
		want  error
	}{
		{[]regcenter.Op{regcenter.CreateOp{Path: "/t/new"}, regcenter.CreateOp{Path: "/t/new/a"},
			regcenter.CreateOp{Path: "/t/j3"}, regcenter.CreateOp{Path: "/t/j3/x"}}, 2, regcenter.ErrNodeExists},
		{[]regcenter.Op{regcenter.CreateOp{Path: "/t/j4/config"}, regcenter.CreateOp{Path: "/t/j4/config/a"},
			regcenter.DeleteOp{Path: "/t/none", Version: -1}}, 0, regcenter.ErrNodeExists},
		{[]regcenter.Op{regcenter.CreateOp{Path: "/t/new"}, regcenter.CreateOp{Path: "/t/new/a"},
			regcenter.DeleteOp{Path: "/t/none", Version: -1}}, 2, regcenter.ErrNoNode},
	} {
		err := c.Multi(ctx, tc.ops...)
		var me *regcenter.MultiError
		if !errors.As(err, &me) || me.Index != tc.index || !errors.Is(me.Err, tc.want) {
			t.Fatalf("Multi(%v) = %v, want op %d: %v", tc.ops, err, tc.index, tc.want)
		}
		if ok, _, err := c.Exists(ctx, "/t/new"); err != nil || ok {
			t.Fatalf("a failed transaction made /t/new: %v, %v", ok, err)
		}
	}
}

// TestEtcdWatchNowReadsInGroups: WatchNow calls made together read their
// states in fewer transactions than there are calls, each getting its own
// node's state.
func TestEtcdWatchNowReadsInGroups(t *testing.T) {
	cluster := etcdtest.Start(t)
	c := newEtcdCenter(t, cluster, regcenter.Config{Namespace: "watchgroups"})
	ctx := testCtx(t)
	const n = 200
	for i := range n {
		if _, err := c.Create(ctx, fmt.Sprintf("/w/n%d", i), []byte(fmt.Sprint(i)), regcenter.Persistent); err != nil {
			t.Fatal(err)
		}
	}
	s0 := c.Stats()
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			st, cancel, err := c.WatchNow(ctx, fmt.Sprintf("/w/n%d", i), regcenter.WatchNode, func(regcenter.Event) {})
			defer cancel()
			if err != nil || !st.Exists || st.Stat.DataLength != int32(len(fmt.Sprint(i))) {
				errs <- fmt.Errorf("node /w/n%d: %+v, %v", i, st, err)
			}
		}()
		go func() {
			defer wg.Done()
			st, cancel, err := c.WatchNow(ctx, fmt.Sprintf("/w/n%d", i), regcenter.WatchChildren, func(regcenter.Event) {})
			defer cancel()
			if err != nil || !st.Exists || len(st.Children) != 0 {
				errs <- fmt.Errorf("children of /w/n%d: %+v, %v", i, st, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st, cancel, err := c.WatchNow(ctx, "/w/missing", regcenter.WatchNode, func(regcenter.Event) {})
	cancel()
	if err != nil || st.Exists {
		t.Fatalf("a missing node: %+v, %v", st, err)
	}
	if d := c.Stats().Sub(s0); d.Watches >= 2*n+1 || d.Watches < 1 {
		t.Fatalf("%d WatchNow calls sent %d requests", 2*n+1, d.Watches)
	}
}
