package election_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/election"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

var zk *zktest.Cluster

func TestMain(m *testing.M) { os.Exit(zktest.RunTests(m, &zk)) }

type candidate struct {
	id      string
	rc      *zookeeper.Center
	e       *election.Election
	leading atomic.Bool
}

func newCandidate(t *testing.T, ns, id string, servers []string) *candidate {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rc, err := zookeeper.Open(ctx, regcenter.Config{Servers: servers, Namespace: ns, SessionTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := &candidate{id: id, rc: rc}
	c.e = election.New(rc, "/job/leader/election/latch", "/job/leader/election/host", id, election.Callbacks{
		OnElected: func(ctx context.Context) { c.leading.Store(true) },
		OnRevoked: func() { c.leading.Store(false) },
	}, nil)
	if err := c.e.Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.e.Close(); rc.Close() })
	return c
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func leaders(cs []*candidate) []string {
	var out []string
	for _, c := range cs {
		if c.leading.Load() && c.e.IsLeader() {
			out = append(out, c.id)
		}
	}
	return out
}

func TestOneLeaderAndSuccession(t *testing.T) {
	ns := fmt.Sprintf("el%d-a", os.Getpid())
	var cs []*candidate
	for _, id := range []string{"a", "b", "c"} {
		cs = append(cs, newCandidate(t, ns, id, zk.Servers()))
	}
	waitFor(t, 10*time.Second, "a leader", func() bool { return len(leaders(cs)) == 1 })
	first := leaders(cs)[0]
	if first != "a" {
		t.Errorf("first leader %s, want the first candidate a", first)
	}
	host, err := cs[0].e.Leader(context.Background())
	if err != nil || host != "a" {
		t.Fatalf("host node says %q (%v), want a", host, err)
	}
	fence, err := cs[0].e.Fence()
	if err != nil {
		t.Fatal(err)
	}
	if err := cs[0].e.Resign(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "b to lead", func() bool { l := leaders(cs); return len(l) == 1 && l[0] == "b" })
	// The old leader's fence no longer lets a transaction through.
	err = cs[1].rc.Multi(context.Background(), fence, regcenter.CreateOp{Path: "/job/fenced"})
	if !errors.Is(err, regcenter.ErrNoNode) {
		t.Fatalf("write fenced on a resigned leader: %v, want ErrNoNode", err)
	}
	if _, err := cs[0].e.Fence(); !errors.Is(err, election.ErrNotLeader) {
		t.Fatalf("Fence after resigning: %v", err)
	}
}

func TestLeaderCutOffLosesLeadershipBeforeSuccessorLeads(t *testing.T) {
	ns := fmt.Sprintf("el%d-b", os.Getpid())
	proxy, err := zktest.NewProxy(zk.Servers()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	a := newCandidate(t, ns, "a", []string{proxy.Addr()})
	waitFor(t, 10*time.Second, "a leads", func() bool { return a.leading.Load() })
	b := newCandidate(t, ns, "b", zk.Servers())
	proxy.Block()
	cutoff := time.Now()
	var aLost, bWon time.Time
	waitFor(t, 15*time.Second, "b leads", func() bool {
		if aLost.IsZero() && !a.leading.Load() {
			aLost = time.Now()
		}
		if bWon.IsZero() && b.leading.Load() {
			bWon = time.Now()
		}
		return !bWon.IsZero()
	})
	if aLost.IsZero() || aLost.After(bWon) {
		t.Fatalf("cut-off leader still led when the successor was elected (lost %v, successor %v)", aLost, bWon)
	}
	t.Logf("cut off at 0; old leader stepped down after %v; successor led after %v",
		aLost.Sub(cutoff).Round(time.Millisecond), bWon.Sub(cutoff).Round(time.Millisecond))
	proxy.Unblock()
}

// A follower at rest sends nothing: it waits on its predecessor's watch.
func TestFollowerAtRestSendsNoRequests(t *testing.T) {
	ns := fmt.Sprintf("el%d-c", os.Getpid())
	a := newCandidate(t, ns, "a", zk.Servers())
	b := newCandidate(t, ns, "b", zk.Servers())
	waitFor(t, 10*time.Second, "a leads", func() bool { return a.leading.Load() })
	time.Sleep(500 * time.Millisecond) // let the follower settle
	before := b.rc.Stats()
	time.Sleep(2 * time.Second)
	d := b.rc.Stats().Sub(before)
	if d.Reads+d.Watches+d.Writes+d.Multis > 2 {
		t.Fatalf("follower at rest sent %+v in 2s", d)
	}
	beforeA := a.rc.Stats()
	time.Sleep(time.Second)
	if d := a.rc.Stats().Sub(beforeA); d.Total() > 1 {
		t.Fatalf("leader at rest sent %+v in 1s", d)
	}
}
