package job_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
	etcdcenter "github.com/shardjob/shardjob/regcenter/etcd"
)

// garbageRounds are the values written into a live job's nodes, a round
// at a time: on etcd the shapes of this layout's stored headers (the magic
// byte of a plain 0xE8, special 0xE9, legacy 0xE7 or meta 0xEC header with
// fields that fit no key: issue 39's 0xE9 and 24 x 0xFF, which used to
// read as the node deleted and created again), cut short, and garbage of
// no shape; on ZooKeeper the same bytes as data.
func garbageRounds() [][][]byte {
	ff := func(n int) []byte { return bytes.Repeat([]byte{0xFF}, n) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	return [][][]byte{
		{cat([]byte{0xE9}, ff(24)), cat([]byte{0xE9}, ff(24), []byte("name: x"))},
		{cat([]byte{0xE8}, ff(8), []byte("{}")), cat([]byte{0xE7}, ff(28)), cat([]byte{0xEC}, ff(16))},
		{cat([]byte{0xE9}, ff(12)), []byte{0xE8, 0}, []byte("\x00garbage{{{")},
	}
}

// rawWriter writes values straight into registry nodes, as a hostile
// operator or another program would: on etcd with a plain etcd client,
// past the center, into the key that holds the node (R n/<depth>/<path>,
// see regcenter/etcd), keeping the key's lease; on ZooKeeper with Set.
type rawWriter struct {
	t   *testing.T
	ns  string
	obs regcenter.Center
	cli *clientv3.Client // nil on ZooKeeper
}

func newRawWriter(t *testing.T, ns string) *rawWriter {
	w := &rawWriter{t: t, ns: ns, obs: observer(t, ns)}
	if e, ok := w.obs.(*etcdcenter.Center); ok {
		w.cli = e.Client()
	}
	return w
}

// put writes v into the node at p if it exists, and reports whether it did.
func (w *rawWriter) put(p string, v []byte) bool {
	w.t.Helper()
	if w.cli == nil {
		_, err := w.obs.Set(tctx(w.t), p, v, -1)
		if err != nil && !errors.Is(err, regcenter.ErrNoNode) {
			w.t.Fatalf("set %s: %v", p, err)
		}
		return err == nil
	}
	key := fmt.Sprintf("/%s/n/%03d%s", w.ns, strings.Count(p, "/"), p)
	ctx := tctx(w.t)
	got, err := w.cli.Get(ctx, key)
	if err != nil {
		w.t.Fatal(err)
	}
	if len(got.Kvs) == 0 {
		return false
	}
	if _, err := w.cli.Put(ctx, key, string(v), clientv3.WithIgnoreLease()); err != nil {
		w.t.Fatalf("put %s: %v", key, err)
	}
	return true
}

// TestClusterLosesNoFireToGarbageValues writes garbage, and on etcd values
// shaped like the stored headers, into every kind of node a live job
// reads (config, records, misfire marks, running marks, assignments,
// status, the reshard epoch, the load table and instance entries) on a
// cluster of two instances: both keep the job, neither logs it removed,
// every fire of every item runs, and each bad config version is reported
// once on each instance.
func TestClusterLosesNoFireToGarbageValues(t *testing.T) {
	ns := namespace(t)
	cfg := everySecond("garbage-values", 4)
	rec := newRecorder()
	logs := map[string]*logCapture{}
	var ins []*instance
	for _, id := range []string{"g1", "g2"} {
		lc := &logCapture{next: testLogger(t).Handler()}
		logs[id] = lc
		ins = append(ins, startInstance(t, ns, id, cfg, rec, job.WithLogger(slog.New(lc))))
	}
	rec.waitFires(t, time.Now().Add(time.Second), 2, 4, 30*time.Second)
	w := newRawWriter(t, ns)
	paths := layout.Job(cfg.Name)
	nodes := []string{paths.ShardingEpoch(), layout.Placement, paths.DisabledItems()}
	for _, id := range []string{"g1", "g2"} {
		nodes = append(nodes, paths.Flag(id, layout.Sharding), paths.Flag(id, layout.Status), layout.Instance(id))
	}
	for item := range 4 {
		for _, n := range []string{layout.Completed, layout.Misfire, layout.Running} {
			nodes = append(nodes, paths.ItemNode(item, n))
		}
	}

	from := time.Now()
	configWrites := 0
	for round, values := range garbageRounds() {
		for _, v := range values {
			if !w.put(paths.Config(), v) {
				t.Fatalf("round %d: the config node is gone", round)
			}
			configWrites++
			for _, n := range nodes {
				w.put(n, v)
			}
			// Both instances see this version before the next comes.
			for id, lc := range logs {
				waitUntil(t, 30*time.Second, func() bool {
					if lc.count("removed from the cluster") > 0 {
						t.Fatalf("%s took a write of %q into the config node for the job's removal", id, v)
					}
					return lc.count("config node rejected; last good config stays in force") >= configWrites
				})
			}
		}
		rec.waitFires(t, time.Now().Add(time.Second), 1, 4, 30*time.Second)
	}
	// The next fires after the last write, then every fire since the
	// first write is accounted for.
	end := time.Now()
	rec.waitFires(t, end.Add(time.Second), 2, 4, 30*time.Second)
	checkEveryFire(t, rec.snapshot(), from, end, 4)
	// And the job keeps firing on every instance.
	waitUntil(t, 30*time.Second, func() bool {
		for f, recs := range rec.fires() {
			by := map[string]bool{}
			for _, r := range recs {
				by[r.server] = true
			}
			if f.After(end) && len(recs) == 4 && by["g1"] && by["g2"] {
				return true
			}
		}
		return false
	})
	for _, in := range ins {
		if got := in.sched.Jobs(); len(got) != 1 || got[0] != cfg.Name {
			t.Errorf("instance %s runs %v after the garbage, want [%s]", in.id, got, cfg.Name)
		}
	}
	for id, lc := range logs {
		if n := lc.count("removed from the cluster"); n != 0 {
			t.Errorf("%s logged the job removed %d times", id, n)
		}
		if n := lc.count("config node rejected"); n != configWrites {
			t.Errorf("%s reported %d rejected configs for %d bad versions", id, n, configWrites)
		}
	}
}

// TestClusterKeepsAJobWhoseConfigIsCreatedAgain: a transaction that
// deletes the config node and creates it again (a watch reports a deletion
// and a creation) does not remove the job: the instances read the node
// back, find it, and go on firing on it.
func TestClusterKeepsAJobWhoseConfigIsCreatedAgain(t *testing.T) {
	ns := namespace(t)
	cfg := everySecond("recreated", 4)
	rec := newRecorder()
	logs := map[string]*logCapture{}
	var ins []*instance
	for _, id := range []string{"r1", "r2"} {
		lc := &logCapture{next: testLogger(t).Handler()}
		logs[id] = lc
		ins = append(ins, startInstance(t, ns, id, cfg, rec, job.WithLogger(slog.New(lc))))
	}
	rec.waitFires(t, time.Now().Add(time.Second), 2, 4, 30*time.Second)
	obs := observer(t, ns)
	p := layout.Job(cfg.Name).Config()
	data, _, err := obs.Get(tctx(t), p)
	if err != nil {
		t.Fatal(err)
	}
	if err := obs.Multi(tctx(t), regcenter.DeleteOp{Path: p, Version: -1}, regcenter.CreateOp{Path: p, Data: data}); err != nil {
		t.Fatal(err)
	}
	for id, lc := range logs {
		waitUntil(t, 30*time.Second, func() bool {
			if lc.count("removed from the cluster") > 0 {
				t.Fatalf("%s took the config node created again for the job's removal", id)
			}
			return lc.count("config node reported deleted is there") > 0
		})
	}
	rec.waitFires(t, time.Now().Add(time.Second), 2, 4, 30*time.Second)
	for _, in := range ins {
		if got := in.sched.Jobs(); len(got) != 1 || got[0] != cfg.Name {
			t.Errorf("instance %s runs %v, want [%s]", in.id, got, cfg.Name)
		}
	}
}
