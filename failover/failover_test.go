package failover_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/failover"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

var zk *zktest.Cluster

func TestMain(m *testing.M) { os.Exit(zktest.RunTests(m, &zk)) }

func session(t *testing.T, ns string) *zookeeper.Center {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rc, err := zookeeper.Open(ctx, regcenter.Config{Servers: zk.Servers(), Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	return rc
}

func TestClaimIsExclusiveAndHandedOnWhenTheClaimerDies(t *testing.T) {
	ns := fmt.Sprintf("fo%d", os.Getpid())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	owner := session(t, ns)
	if err := failover.NewQueue(owner, "job").Enqueue(ctx, []failover.Entry{{Item: 3, Fire: 1000, From: "dead"}}); err != nil {
		t.Fatal(err)
	}
	// Enqueueing the same item again is a no-op, not an error.
	if err := failover.NewQueue(owner, "job").Enqueue(ctx, []failover.Entry{{Item: 3, Fire: 2000, From: "dead"}}); err != nil {
		t.Fatal(err)
	}
	const racers = 8
	rcs := make([]*zookeeper.Center, racers)
	for i := range rcs {
		rcs[i] = session(t, ns)
	}
	var (
		mu      sync.Mutex
		winners []int
		wg      sync.WaitGroup
	)
	for i := range rcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := failover.NewQueue(rcs[i], "job").Claim(ctx, 3, fmt.Sprintf("s%d", i))
			switch {
			case err == nil:
				if e.Fire != 1000 || e.From != "dead" || e.Item != 3 {
					t.Errorf("claimed entry %+v", e)
				}
				mu.Lock()
				winners = append(winners, i)
				mu.Unlock()
			case errors.Is(err, failover.ErrClaimed):
			default:
				t.Errorf("claimer %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if len(winners) != 1 {
		t.Fatalf("%d claimers won item 3, want exactly 1: %v", len(winners), winners)
	}
	// The winner dies before finishing: its claim goes with its session and
	// the item, still queued, can be claimed again.
	rcs[winners[0]].Close()
	next := rcs[(winners[0]+1)%racers]
	claimed, err := failover.NewQueue(next, "job").Claim(ctx, 3, "next")
	if err != nil {
		t.Fatalf("claim after the claimer died: %v", err)
	}
	q := failover.NewQueue(next, "job")
	if err := next.Multi(ctx, q.DoneOps(claimed)...); err != nil {
		t.Fatal(err)
	}
	items, err := q.Items(ctx)
	if err != nil || len(items) != 0 {
		t.Fatalf("queue after done: %v, %v", items, err)
	}
	if _, err := q.Claim(ctx, 3, "late"); !errors.Is(err, failover.ErrNotQueued) {
		t.Fatalf("claim of a finished item: %v, want ErrNotQueued", err)
	}
}

// A merge of two entries of one item keeps the earlier fire, with its
// server, and the later fire that may have run: a debt only grows, and so
// does what its run must be told may have run.
func TestEnqueueMergesMayHaveRun(t *testing.T) {
	ns := fmt.Sprintf("fomerge%d", os.Getpid())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc := session(t, ns)
	q := failover.NewQueue(rc, "job")
	for _, e := range []failover.Entry{
		{Item: 1, Fire: 2000, From: "b", MayHaveRun: 3000},
		{Item: 1, Fire: 1000, From: "a", MayHaveRun: 1000},
		{Item: 1, Fire: 1500, From: "c", MayHaveRun: 5000},
	} {
		if err := q.Enqueue(ctx, []failover.Entry{e}); err != nil {
			t.Fatal(err)
		}
	}
	e, err := q.Claim(ctx, 1, "s")
	if err != nil {
		t.Fatal(err)
	}
	if e.Fire != 1000 || e.From != "a" || e.MayHaveRun != 5000 {
		t.Errorf("merged entry %+v, want fire 1000 from a, mayHaveRun 5000", e)
	}
}

// A merge keeps the failed attempts of the fire it keeps: those of an
// entry of the same fire (the larger count), none of a later fire.
func TestEnqueueMergesAttempts(t *testing.T) {
	ns := fmt.Sprintf("foattempts%d", os.Getpid())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc := session(t, ns)
	q := failover.NewQueue(rc, "job")
	for _, e := range []failover.Entry{
		{Item: 2, Fire: 2000, From: "a", Attempts: 2},
		{Item: 2, Fire: 2000, From: "b", Attempts: 1},
		{Item: 3, Fire: 2000, From: "a", Attempts: 2},
		{Item: 3, Fire: 1000, From: "b"},
		{Item: 4, Fire: 1000, From: "a"},
		{Item: 4, Fire: 1000, From: "b", Attempts: 3},
	} {
		if err := q.Enqueue(ctx, []failover.Entry{e}); err != nil {
			t.Fatal(err)
		}
	}
	for item, want := range map[int]struct {
		fire     int64
		attempts int
	}{2: {2000, 2}, 3: {1000, 0}, 4: {1000, 3}} {
		e, err := q.Claim(ctx, item, "s")
		if err != nil {
			t.Fatal(err)
		}
		if e.Fire != want.fire || e.Attempts != want.attempts {
			t.Errorf("item %d: merged entry %+v, want fire %d with %d failed attempts", item, e, want.fire, want.attempts)
		}
	}
}
