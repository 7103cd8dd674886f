package registration

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/roomtest"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
)

// afterRead is a center whose GetMany runs changed once it has read: a
// change by another client between a join's read and its transaction.
type afterRead struct {
	regcenter.Center
	changed func()
}

func (c *afterRead) GetMany(ctx context.Context, paths ...string) ([]regcenter.NodeData, error) {
	nodes, err := c.Center.GetMany(ctx, paths...)
	if c.changed != nil {
		c.changed()
		c.changed = nil
	}
	return nodes, err
}

// JoinMany joins, in one read and one transaction, every job whose nodes
// allow it, each as the node-by-node path would leave it: a server id new
// to the job gets its node and status; one known to it has its shutdown
// flag cleared, its status made (a dead earlier life's deleted first),
// its previous items read and the reshard flag set; Overwrite writes the
// config. A job whose status another live session holds, whose tree lacks
// a part, whose config is gone, or whose nodes moved between the read and
// the transaction is left out having changed nothing.
func TestJoinMany(t *testing.T) {
	zc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), roomtest.Timeout)
	defer cancel()
	const ns = "join"
	rc := roomtest.Open(t, zc.Servers(), ns)
	obs := roomtest.Open(t, zc.Servers(), ns)   // another client, for changes
	other := roomtest.Open(t, zc.Servers(), ns) // another live instance of s1
	stale := roomtest.Open(t, zc.Servers(), ns) // a dead earlier life of s1, as StaleOwner proves

	const (
		fresh     = iota // s1 new to the job
		restarted        // s1 known: shutdown flag, assignment, no reshard flag
		inUse            // another live session holds s1's status
		staleLife        // a dead earlier life's status
		noEpoch          // leader/sharding missing
		noConfig         // the config node gone
		noQueue          // failover on, the queue missing
		overwrite        // Overwrite: our config written
		moved            // the reshard flag deleted after the read
		jobs
	)
	names := make([]string, jobs)
	for i := range names {
		names[i] = fmt.Sprint("j", i)
	}
	made, err := CreateTrees(ctx, obs, jobs, func(i int) ([]regcenter.Op, error) {
		return TreeOps(Tree{Paths: layout.Job(names[i]), Server: "s0", Config: []byte("stored")}), nil
	}, func(i int) string { return names[i] })
	if err != nil || slices.Contains(made, false) {
		t.Fatalf("trees %v: %v", made, err)
	}
	p := func(i int) layout.Job { return layout.Job(names[i]) }
	put := func(path, data string) { roomtest.Put(t, ctx, obs, path, []byte(data)) }
	put(p(restarted).Flag("s1", layout.Shutdown), "")
	put(p(restarted).Flag("s1", layout.Sharding), "0,1")
	if err := obs.Delete(ctx, p(restarted).Necessary(), -1); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		i  int
		rc regcenter.Center
	}{{inUse, other}, {staleLife, stale}} {
		put(p(c.i).Server("s1"), "")
		if _, err := c.rc.Create(ctx, p(c.i).Flag("s1", layout.Status), nil, regcenter.Ephemeral); err != nil {
			t.Fatal(err)
		}
	}
	if err := obs.DeleteTree(ctx, p(noEpoch).ShardingEpoch()); err != nil {
		t.Fatal(err)
	}
	if err := obs.Delete(ctx, p(noConfig).Config(), -1); err != nil {
		t.Fatal(err)
	}

	adopted := map[int]string{}
	gs := make([]*Registrar, jobs)
	for i := range gs {
		gs[i] = &Registrar{
			Node: &Node{RC: rc, Paths: p(i), Job: names[i], Server: "s1", Log: slog.New(slog.DiscardHandler),
				StaleOwner: func() int64 { return stale.Session().ID() }, SessionTimeout: func() time.Duration { return time.Second }},
			Session: rc.Session,
			Adopt: func(_ context.Context, stored []byte) ([]byte, error) {
				adopted[i] = string(stored)
				if i == overwrite {
					return []byte("ours"), nil
				}
				return nil, nil
			},
			Failover: func() bool { return i == noQueue },
		}
	}
	via := &afterRead{Center: rc, changed: func() {
		if err := obs.Delete(ctx, p(moved).Necessary(), -1); err != nil {
			t.Error(err)
		}
	}}
	before := rc.Stats()
	joined, err := JoinMany(ctx, via, gs)
	if err != nil {
		t.Fatal(err)
	}
	// One read; one transaction refused at the moved job's check, and one
	// without it.
	if d := rc.Stats().Sub(before); d.Reads != 1 || d.Multis != 2 || d.Total() != 3 {
		t.Errorf("requests %+v, want one read and two transactions", d)
	}

	sess := rc.Session()
	for i := range jobs {
		pi, j := p(i), joined[i]
		ok, st, err := obs.Exists(ctx, pi.Flag("s1", layout.Status))
		if err != nil {
			t.Fatal(err)
		}
		switch i {
		case fresh, restarted, staleLife, overwrite:
			if j == nil {
				t.Errorf("%s: left out", names[i])
				continue
			}
			if j.Session != sess || j.Fresh != (i == fresh || i == overwrite) {
				t.Errorf("%s: joined %+v, want under %v, fresh %v", names[i], j, sess, i == fresh)
			}
			if !ok || st.EphemeralOwner != sess.ID() {
				t.Errorf("%s: status exists=%v owner 0x%x, want ours", names[i], ok, st.EphemeralOwner)
			}
			if !roomtest.Exists(t, ctx, obs, pi.Necessary()) {
				t.Errorf("%s: no reshard flagged", names[i])
			}
		default:
			if j != nil {
				t.Errorf("%s: joined %+v, want it left out", names[i], j)
			}
			if i == inUse && (!ok || st.EphemeralOwner != other.Session().ID()) {
				t.Errorf("%s: the other session's status was touched (exists=%v owner 0x%x)", names[i], ok, st.EphemeralOwner)
			}
			if i != inUse && (ok || roomtest.Exists(t, ctx, obs, pi.Server("s1"))) {
				t.Errorf("%s: left out, but s1's nodes were made", names[i])
			}
		}
	}
	if j := joined[restarted]; j != nil && !slices.Equal(j.Previous, []int{0, 1}) {
		t.Errorf("previous items %v, want [0 1]", j.Previous)
	}
	if roomtest.Exists(t, ctx, obs, p(restarted).Flag("s1", layout.Shutdown)) {
		t.Error("the shutdown flag was not cleared")
	}
	if _, st, err := obs.Get(ctx, p(restarted).ShardingEpoch()); err != nil || st.Version == 0 {
		t.Errorf("the reshard flag set without moving the epoch (version %d, %v)", st.Version, err)
	}
	if data, _, err := obs.Get(ctx, p(overwrite).Config()); err != nil || string(data) != "ours" {
		t.Errorf("overwritten config %q, %v; want ours", data, err)
	}
	if data, _, err := obs.Get(ctx, p(fresh).Config()); err != nil || string(data) != "stored" {
		t.Errorf("stored config %q, %v; want it kept", data, err)
	}
	if adopted[fresh] != "stored" || adopted[overwrite] != "stored" {
		t.Errorf("adopted %v, want the stored config", adopted)
	}
}
