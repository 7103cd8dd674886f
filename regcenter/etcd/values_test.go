package etcd_test

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"testing"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/etcd"
	"github.com/shardjob/shardjob/regcenter/etcdtest"
)

// foreignValues are values a raw etcd client may put into a node's key:
// shaped like this layout's headers (its magic bytes with fields that do
// not fit the key: the shape of issue 39, -1 everywhere), cut short, or
// plain garbage.
func foreignValues() []struct {
	name string
	v    []byte
} {
	ff := func(n int) []byte { return bytes.Repeat([]byte{0xFF}, n) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	return []struct {
		name string
		v    []byte
	}{
		{"special, all ones", cat([]byte{0xE9}, ff(24))},
		{"special, all ones, with data", cat([]byte{0xE9}, ff(24), []byte("name: x"))},
		{"special, zeros", cat([]byte{0xE9}, make([]byte, 24), []byte("data"))},
		{"special, huge vbase", cat([]byte{0xE9}, make([]byte, 8), []byte{0x7F}, ff(7), make([]byte, 8))},
		{"special, cut short", cat([]byte{0xE9}, ff(20))},
		{"plain, all ones", cat([]byte{0xE8}, ff(8), []byte("data"))},
		{"plain, cut short", []byte{0xE8, 1, 2}},
		{"legacy, all ones", cat([]byte{0xE7}, ff(28), []byte("x"))},
		{"legacy, cut short", cat([]byte{0xE7}, ff(10))},
		{"meta magic", cat([]byte{0xEC}, ff(16))},
		{"text", []byte("{{{ not yaml")},
		{"empty", nil},
	}
}

// TestEtcdForeignValueIsDataNotADeletion: a raw client's put into a node's
// key, whatever its bytes, leaves the node existing with those bytes as
// its data, one version later, with its creation unchanged; a watch sees a
// data change and never a deletion; and the center writes the node again
// over it. The shape of issue 39 (0xE9 then 24 x 0xFF) used to read as a
// node created again (czxid changed, a deletion and a creation to
// watches), which the job package took for the job's removal.
func TestEtcdForeignValueIsDataNotADeletion(t *testing.T) {
	cluster := etcdtest.Start(t)
	c := newEtcdCenter(t, cluster, regcenter.Config{Namespace: "foreign"})
	ctx := testCtx(t)
	cli, err := cluster.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()

	if err := c.EnsurePath(ctx, "/job"); err != nil {
		t.Fatal(err)
	}
	for i, fv := range foreignValues() {
		p := fmt.Sprintf("/job/n%d", i)
		if _, err := c.Create(ctx, p, []byte("good"), regcenter.Persistent); err != nil {
			t.Fatal(err)
		}
		_, before, err := c.Get(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		node, parent := newEventLog(), newEventLog()
		_, cancelNode, err := c.WatchNow(ctx, p, regcenter.WatchNode, node.add)
		if err != nil {
			t.Fatal(err)
		}
		_, cancelParent, err := c.WatchNow(ctx, "/job", regcenter.WatchChildren, parent.add)
		if err != nil {
			t.Fatal(err)
		}

		if _, err := cli.Put(ctx, etcd.NodeKey(c, p), string(fv.v)); err != nil {
			t.Fatal(err)
		}
		node.waitFor(t, fv.name+": the change", func(evs []regcenter.Event) bool { return len(evs) > 0 })

		data, st, err := c.Get(ctx, p)
		if err != nil {
			t.Fatalf("%s: get: %v", fv.name, err)
		}
		if !bytes.Equal(data, fv.v) {
			t.Errorf("%s: data %q, want the value put %q", fv.name, data, fv.v)
		}
		if st.Version != before.Version+1 || st.Czxid != before.Czxid || st.Ctime != before.Ctime ||
			st.DataLength != int32(len(fv.v)) || st.Mzxid <= before.Mzxid {
			t.Errorf("%s: stat %+v after the put, want the node's creation kept and one version more than %+v", fv.name, st, before)
		}
		if ok, est, err := c.Exists(ctx, p); err != nil || !ok || est != st {
			t.Errorf("%s: exists %v %+v %v, want the stat Get gave", fv.name, ok, est, err)
		}
		kids, err := c.Children(ctx, "/job")
		if err != nil || !slices.Contains(kids, p[len("/job/"):]) {
			t.Errorf("%s: children %v %v, without the node", fv.name, kids, err)
		}

		// The center writes over it, at the version it reads.
		if _, err := c.Set(ctx, p, []byte("again"), st.Version); err != nil {
			t.Fatalf("%s: set over the foreign value: %v", fv.name, err)
		}
		node.waitFor(t, fv.name+": the second change", func(evs []regcenter.Event) bool { return len(evs) > 1 })
		cancelNode()
		cancelParent()
		// The events of the node's own creation may still reach a watch
		// armed just after it; a deletion must never come.
		for _, ev := range append(events(node), events(parent)...) {
			if ev.Type == regcenter.EventDeleted {
				t.Errorf("%s: a watch saw %v", fv.name, ev)
			}
		}
		if evs := events(node); evs[len(evs)-1].Type != regcenter.EventDataChanged {
			t.Errorf("%s: node watch saw %v, ending in no data change", fv.name, evs)
		}
		if data, st2, err := c.Get(ctx, p); err != nil || string(data) != "again" || st2.Version != st.Version+1 || st2.Czxid != before.Czxid {
			t.Errorf("%s: after the set: %q %+v %v", fv.name, data, st2, err)
		}
	}
}

// TestEtcdForeignMetaValue: garbage in a node's meta key (its ctime and
// cversion) reads as a sane stat, and children are still created and
// numbered under it.
func TestEtcdForeignMetaValue(t *testing.T) {
	cluster := etcdtest.Start(t)
	c := newEtcdCenter(t, cluster, regcenter.Config{Namespace: "foreignmeta"})
	ctx := testCtx(t)
	cli, err := cluster.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for i, fv := range foreignValues() {
		p := fmt.Sprintf("/m%d", i)
		if _, err := c.Create(ctx, p, nil, regcenter.Persistent); err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Put(ctx, etcd.MetaKey(c, p), string(fv.v)); err != nil {
			t.Fatal(err)
		}
		_, st, err := c.Get(ctx, p)
		if err != nil || st.CVersion < 0 || !st.Ctime.IsZero() && (st.Ctime.Unix() < 0 || st.Ctime.Year() > 9999) {
			t.Errorf("%s: stat %+v, %v", fv.name, st, err)
		}
		var names []string
		for range 2 {
			name, err := c.Create(ctx, p+"/s-", nil, regcenter.PersistentSequential)
			if err != nil {
				t.Fatalf("%s: sequential create: %v", fv.name, err)
			}
			names = append(names, name)
		}
		if names[0] == names[1] || !seqName.MatchString(names[0]) || !seqName.MatchString(names[1]) {
			t.Errorf("%s: sequential names %v", fv.name, names)
		}
		if _, st2, err := c.Get(ctx, p); err != nil || st2.NumChildren != 2 || st2.CVersion < 0 {
			t.Errorf("%s: after two children: %+v %v", fv.name, st2, err)
		}
		if err := c.DeleteTree(ctx, p); err != nil && !errors.Is(err, regcenter.ErrNoNode) {
			t.Errorf("%s: delete: %v", fv.name, err)
		}
	}
}

func events(l *eventLog) []regcenter.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]regcenter.Event(nil), l.evs...)
}

// seqName is a sequential node's name as ZooKeeper makes it: a
// non-negative counter in ten digits.
var seqName = regexp.MustCompile(`/s-[0-9]{10}$`)
