package etcd_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/etcdtest"
)

// TestEtcdWriteIsOneRequest: a fire's writes on etcd are one transaction
// each, whatever their number of items: the claim (the assignment's checks,
// a check of each item's completion record and its running mark created)
// and the completion (the marks deleted, the records set at their
// versions). A write whose op fails is one request too, and names the op.
func TestEtcdWriteIsOneRequest(t *testing.T) {
	cluster := etcdtest.Start(t)
	// A transaction of a thousand items takes seconds on a member inside
	// a process run with -race: each request may take as long as the
	// session timeout.
	c := newEtcdCenter(t, cluster, regcenter.Config{Namespace: "onereq", SessionTimeout: 20 * time.Second})
	ctx := testCtx(t)
	if _, err := c.Create(ctx, "/job/leader/epoch", nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	for _, items := range []int{1, 1000} {
		base := fmt.Sprintf("/job/x%d", items)
		// Each item's completion record, written by an earlier fire.
		for start := 0; start < items; start += 200 {
			var ops []regcenter.Op
			for i := start; i < min(start+200, items); i++ {
				ops = append(ops, regcenter.CreateOp{Path: fmt.Sprintf("%s/%d", base, i)},
					regcenter.CreateOp{Path: fmt.Sprintf("%s/%d/completed", base, i), Data: []byte("fire 1")})
			}
			if err := c.EnsurePath(ctx, base); err != nil {
				t.Fatal(err)
			}
			if err := c.Multi(ctx, ops...); err != nil {
				t.Fatal(err)
			}
		}
		claim := []regcenter.Op{regcenter.CheckOp{Path: "/job/leader/epoch", Version: 0}}
		var done []regcenter.Op
		for i := range items {
			claim = append(claim,
				regcenter.CheckOp{Path: fmt.Sprintf("%s/%d/completed", base, i), Version: 0},
				regcenter.CreateOp{Path: fmt.Sprintf("%s/%d/running", base, i), Data: []byte("me"), Mode: regcenter.Ephemeral})
			done = append(done,
				regcenter.DeleteOp{Path: fmt.Sprintf("%s/%d/running", base, i), Version: -1},
				regcenter.SetOp{Path: fmt.Sprintf("%s/%d/completed", base, i), Data: []byte("fire 2"), Version: 0})
		}
		for _, w := range []struct {
			what string
			ops  []regcenter.Op
		}{{"claim", claim}, {"completion", done}} {
			before := c.Stats()
			if err := c.Multi(ctx, w.ops...); err != nil {
				t.Fatalf("%d items: %s: %v", items, w.what, err)
			}
			if d := c.Stats().Sub(before); d.Total() != 1 || d.Multis != 1 {
				t.Errorf("%d items: the %s (%d ops) sent %+v, want one transaction and nothing else", items, w.what, len(w.ops), d)
			}
		}
		last := fmt.Sprintf("%s/%d/completed", base, items-1)
		if data, st, err := c.Get(ctx, last); err != nil || string(data) != "fire 2" || st.Version != 1 {
			t.Errorf("%d items: %s after the completion: %q version %d (%v), want \"fire 2\" version 1", items, last, data, st.Version, err)
		}
		// The claim again, now that every record is at version 1: its
		// second item's check fails, and says so in one request.
		before := c.Stats()
		err := c.Multi(ctx, claim...)
		var me *regcenter.MultiError
		if !errors.As(err, &me) || me.Index != 1 || !errors.Is(err, regcenter.ErrBadVersion) {
			t.Errorf("%d items: a claim at stale versions: %v, want a *MultiError at op 1 wrapping ErrBadVersion", items, err)
		}
		// A small write reads what names the failing op inside the
		// transaction; a large one reads it after.
		if d := c.Stats().Sub(before); items == 1 && d.Total() != 1 {
			t.Errorf("%d items: the failing claim sent %+v, want one request", items, d)
		}
	}
	for _, w := range []struct {
		what string
		do   func() error
		want error
	}{
		{"create of an existing node", func() error { _, err := c.Create(ctx, "/job/leader/epoch", nil, regcenter.Persistent); return err }, regcenter.ErrNodeExists},
		{"set at a stale version", func() error { _, err := c.Set(ctx, "/job/leader/epoch", nil, 3); return err }, regcenter.ErrBadVersion},
		{"set", func() error { _, err := c.Set(ctx, "/job/leader/epoch", []byte("1"), 0); return err }, nil},
		{"delete of a node with children", func() error { return c.Delete(ctx, "/job/leader", -1) }, regcenter.ErrNotEmpty},
		{"delete", func() error { return c.Delete(ctx, "/job/leader/epoch", 1) }, nil},
		{"create", func() error { _, err := c.Create(ctx, "/job/leader/epoch", nil, regcenter.Persistent); return err }, nil},
	} {
		before := c.Stats()
		if err := w.do(); !errors.Is(err, w.want) || (w.want == nil && err != nil) {
			t.Errorf("%s: %v, want %v", w.what, err, w.want)
		}
		if d := c.Stats().Sub(before); d.Total() != 1 {
			t.Errorf("%s sent %+v, want one request", w.what, d)
		}
	}
}

// TestEtcdKeepAlivesAreNotRequests: the lease's keepalives are the
// session's upkeep, as ZooKeeper's pings are: an idle center keeps its
// lease alive and counts no request.
func TestEtcdKeepAlivesAreNotRequests(t *testing.T) {
	cluster := etcdtest.Start(t)
	c := newEtcdCenter(t, cluster, regcenter.Config{Namespace: "upkeep", SessionTimeout: 2 * time.Second})
	deadline := time.Now().Add(20 * time.Second)
	for c.Stats().Watches == 0 { // the namespace watch, opened once
		if time.Now().After(deadline) {
			t.Fatal("no namespace watch within 20 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	before, k0 := c.Stats(), c.KeepAlives()
	for c.KeepAlives() < k0+3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d keepalives within 20 s, want 3", c.KeepAlives()-k0)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := c.Session().Check(); err != nil {
		t.Fatalf("session after %d keepalives: %v", c.KeepAlives()-k0, err)
	}
	if d := c.Stats().Sub(before); d.Total() != 0 {
		t.Errorf("an idle center counted %+v over %d keepalives, want no request", d, c.KeepAlives()-k0)
	}
}

// TestEtcdEphemeralLeavesNoKey: every key of an ephemeral node is on its
// session's lease, so a session's end leaves none of them behind, and a
// node of the same path created later starts fresh.
func TestEtcdEphemeralLeavesNoKey(t *testing.T) {
	cluster := etcdtest.Start(t)
	a := newEtcdCenter(t, cluster, regcenter.Config{Namespace: "leftover"})
	ctx := testCtx(t)
	if _, err := a.Create(ctx, "/e/x", []byte("a"), regcenter.Ephemeral); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Set(ctx, "/e/x", []byte("b"), 0); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	cli, err := cluster.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	resp, err := cli.Get(ctx, "/leftover/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if strings.HasSuffix(string(kv.Key), "/e/x") {
			t.Errorf("key %s is left after the session's end", kv.Key)
		}
	}
	b := newEtcdCenter(t, cluster, regcenter.Config{Namespace: "leftover"})
	if _, err := b.Create(ctx, "/e/x", nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	if _, st, err := b.Get(ctx, "/e/x"); err != nil || st.Version != 0 || st.CVersion != 0 || st.EphemeralOwner != 0 {
		t.Errorf("/e/x created again: %+v (%v), want a new persistent node", st, err)
	}
}

// TestEtcdFlagAndParentSetIsOneRequest: a create of a node and a set of its
// parent touch different keys (the parent's meta key counts the child),
// so a reshard's flag and its epoch's move are one transaction, as a
// leave's status delete beside its assignment's set is. The parent's
// version moves with the set, its cversion with the create; a second flag
// fails at the create, and a delete of the parent beside a create under
// it still fails as ZooKeeper's would.
func TestEtcdFlagAndParentSetIsOneRequest(t *testing.T) {
	cluster := etcdtest.Start(t)
	c := newEtcdCenter(t, cluster, regcenter.Config{Namespace: "flagset", SessionTimeout: 10 * time.Second})
	ctx := testCtx(t)
	if err := c.EnsurePath(ctx, "/job/leader/sharding"); err != nil {
		t.Fatal(err)
	}
	if err := c.EnsurePath(ctx, "/job/servers/i1"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/job/servers/i1/status", "/job/servers/i1/sharding"} {
		if _, err := c.Create(ctx, p, []byte("x"), regcenter.Persistent); err != nil {
			t.Fatal(err)
		}
	}
	_, before, err := c.Exists(ctx, "/job/leader/sharding")
	if err != nil {
		t.Fatal(err)
	}
	flag := []regcenter.Op{
		regcenter.CreateOp{Path: "/job/leader/sharding/necessary"},
		regcenter.SetOp{Path: "/job/leader/sharding", Version: -1},
	}
	leave := append([]regcenter.Op{
		regcenter.DeleteOp{Path: "/job/servers/i1/status", Version: -1},
		regcenter.SetOp{Path: "/job/servers/i1/sharding", Version: 0},
	}, flag...)
	sent := c.Stats()
	if err := c.Multi(ctx, leave...); err != nil {
		t.Fatal(err)
	}
	if d := c.Stats().Sub(sent); d.Total() != 1 || d.Multis != 1 {
		t.Errorf("a leave with a reshard's flag sent %+v, want one transaction and nothing else", d)
	}
	_, after, err := c.Exists(ctx, "/job/leader/sharding")
	if err != nil {
		t.Fatal(err)
	}
	if after.Version != before.Version+1 || after.CVersion != before.CVersion+1 || after.NumChildren != 1 {
		t.Errorf("the epoch after the flag: version %d cversion %d children %d; want version %d, cversion %d, one child",
			after.Version, after.CVersion, after.NumChildren, before.Version+1, before.CVersion+1)
	}
	if ok, _, err := c.Exists(ctx, "/job/servers/i1/status"); ok || err != nil {
		t.Errorf("the status after the leave: exists %v (%v)", ok, err)
	}
	sent = c.Stats()
	err = c.Multi(ctx, flag...)
	var me *regcenter.MultiError
	if !errors.As(err, &me) || me.Index != 0 || !errors.Is(err, regcenter.ErrNodeExists) {
		t.Errorf("a second flag: %v, want a *MultiError at op 0 wrapping ErrNodeExists", err)
	}
	if _, st, _ := c.Exists(ctx, "/job/leader/sharding"); st.Version != after.Version {
		t.Errorf("a failed flag moved the epoch to version %d", st.Version)
	}
	err = c.Multi(ctx, regcenter.DeleteOp{Path: "/job/leader/sharding/necessary", Version: -1},
		regcenter.DeleteOp{Path: "/job/leader/sharding", Version: -1},
		regcenter.CreateOp{Path: "/job/leader/sharding/x"})
	if !errors.As(err, &me) || me.Index != 2 || !errors.Is(err, regcenter.ErrNoNode) {
		t.Errorf("a delete of a parent beside a create under it: %v, want a *MultiError at op 2 wrapping ErrNoNode", err)
	}
	if ok, _, err := c.Exists(ctx, "/job/leader/sharding/necessary"); !ok || err != nil {
		t.Errorf("a failed transaction deleted the flag: exists %v (%v)", ok, err)
	}
}

// TestEtcdReadBurstGoesInGroups: single-node reads made at once — a
// death's reshards, each reading every server's children — go in a few
// read transactions, not one request each, and each answer is its own
// read's: a node's children, data and stat, a missing node's ErrNoNode.
// A lone read is one request.
func TestEtcdReadBurstGoesInGroups(t *testing.T) {
	cluster := etcdtest.Start(t)
	c := newEtcdCenter(t, cluster, regcenter.Config{Namespace: "readburst"})
	ctx := testCtx(t)
	const servers = 200
	var ops []regcenter.Op
	for i := range servers {
		p := fmt.Sprintf("/job/servers/s%d", i)
		ops = append(ops, regcenter.CreateOp{Path: p, Data: []byte(fmt.Sprintf("data %d", i))},
			regcenter.CreateOp{Path: p + "/status"})
		if i%2 == 0 {
			ops = append(ops, regcenter.CreateOp{Path: p + "/disabled"})
		}
	}
	if err := c.EnsurePath(ctx, "/job/servers"); err != nil {
		t.Fatal(err)
	}
	if err := c.Multi(ctx, ops...); err != nil {
		t.Fatal(err)
	}

	before := c.Stats()
	kids := make([][]string, servers+1)
	data := make([][]byte, servers)
	exists := make([]bool, servers)
	errs := make([]error, 3*servers+1)
	var wg sync.WaitGroup
	for i := range servers {
		p := fmt.Sprintf("/job/servers/s%d", i)
		wg.Go(func() { kids[i], errs[3*i] = c.Children(ctx, p) })
		wg.Go(func() { data[i], _, errs[3*i+1] = c.Get(ctx, p) })
		wg.Go(func() { exists[i], _, errs[3*i+2] = c.Exists(ctx, p+"/disabled") })
	}
	wg.Go(func() { kids[servers], errs[3*servers] = c.Children(ctx, "/job/servers/gone") })
	wg.Wait()
	d := c.Stats().Sub(before)
	for i := range servers {
		want := []string{"status"}
		if i%2 == 0 {
			want = []string{"disabled", "status"}
		}
		slices.Sort(kids[i])
		if !slices.Equal(kids[i], want) || errs[3*i] != nil {
			t.Errorf("children of s%d: %v (%v), want %v", i, kids[i], errs[3*i], want)
		}
		if string(data[i]) != fmt.Sprintf("data %d", i) || errs[3*i+1] != nil {
			t.Errorf("data of s%d: %q (%v)", i, data[i], errs[3*i+1])
		}
		if exists[i] != (i%2 == 0) || errs[3*i+2] != nil {
			t.Errorf("s%d/disabled exists: %v (%v), want %v", i, exists[i], errs[3*i+2], i%2 == 0)
		}
	}
	if !errors.Is(errs[3*servers], regcenter.ErrNoNode) {
		t.Errorf("children of a missing node: %v, want ErrNoNode", errs[3*servers])
	}
	if reads := 3*servers + 1; d.Reads >= int64(reads)/4 || d.Total() != d.Reads {
		t.Errorf("%d reads at once sent %+v, want them in groups (fewer than a quarter as many read requests, nothing else)", reads, d)
	}
	t.Logf("%d reads at once: %d read requests", 3*servers+1, d.Reads)

	before = c.Stats()
	if _, err := c.Children(ctx, "/job/servers/s1"); err != nil {
		t.Fatal(err)
	}
	if d := c.Stats().Sub(before); d.Total() != 1 || d.Reads != 1 {
		t.Errorf("a lone read sent %+v, want one read request", d)
	}
}
