package dispatch

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/regcenter"
	_ "github.com/shardjob/shardjob/regcenter/etcd" // regcenter.Open serves Config.Etcd
	"github.com/shardjob/shardjob/regcenter/etcdtest"
	_ "github.com/shardjob/shardjob/regcenter/postgres" // regcenter.Open serves postgres:// URLs
	"github.com/shardjob/shardjob/regcenter/zktest"
	_ "github.com/shardjob/shardjob/regcenter/zookeeper" // regcenter.Open serves Config.Servers
)

// TestRegistrySessionEndFreesTasksAtOnce: with a regcenter, on ZooKeeper,
// on etcd and on PostgreSQL (a database of the package's server), a node whose session ends has its handlers cancelled at
// once, and another node frees its task at once, long before the lease TTL
// (an hour here).
func TestRegistrySessionEndFreesTasksAtOnce(t *testing.T) {
	t.Run("zookeeper", func(t *testing.T) {
		testSessionEndFreesTasksAtOnce(t, regcenter.Config{Servers: zktest.Start(t).Servers(), Namespace: "dispatchtest"})
	})
	t.Run("etcd", func(t *testing.T) {
		testSessionEndFreesTasksAtOnce(t, regcenter.Config{Etcd: etcdtest.Start(t).Endpoints(), Namespace: "dispatchtest"})
	})
	t.Run("postgres", func(t *testing.T) {
		url, err := pg.NewDatabase(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		testSessionEndFreesTasksAtOnce(t, regcenter.Config{URL: url, Namespace: "dispatchtest"})
	})
}

func testSessionEndFreesTasksAtOnce(t *testing.T, rcCfg regcenter.Config) {
	ctx := testCtx(t)
	connect := func() regcenter.Center {
		rc, err := regcenter.Open(ctx, rcCfg, regcenter.WithLogger(testlog.Logger(t)))
		if err != nil {
			t.Fatal(err)
		}
		return rc
	}
	dsn, err := pg.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rcA, rcB := connect(), connect()
	t.Cleanup(func() { // after the dispatchers close (cleanups run last first)
		if err := rcB.Close(); err != nil {
			t.Error(err)
		}
	})
	startedA, startedB := make(chan Task, 1), make(chan Task, 1)
	endedA := make(chan error, 1)
	base := Config{Driver: "postgres", DSN: dsn, Logger: testlog.Logger(t), LeaseTTL: time.Hour,
		Backoff: Backoff{Base: time.Millisecond, Max: time.Millisecond, Jitter: 0.01}}
	ca, cb := base, base
	ca.NodeID, ca.Regcenter = "A", rcA
	ca.OnStart = func(hctx context.Context, tk Task) error {
		startedA <- tk
		<-hctx.Done()
		endedA <- hctx.Err()
		return nil
	}
	cb.NodeID, cb.Regcenter = "B", rcB
	cb.FinishOnReturn = true
	cb.OnStart = func(ctx context.Context, tk Task) error { startedB <- tk; return nil }
	a := open(t, ca)
	mustWorker(t, a, "w", 1)
	ts, err := a.Assign(ctx, Assignment{Worker: "w", Start: time.Now().Add(-time.Second), End: time.Now().Add(time.Hour), Tasks: newTasks("t"), MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	tk := recv(t, startedA, "start on A")
	b := open(t, cb)
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rcA.Close(); err != nil { // A's session ends
		t.Fatal(err)
	}
	if err := recv(t, endedA, "A's handler end"); !errors.Is(err, context.Canceled) {
		t.Errorf("A's handler context: %v, want Canceled", err)
	}
	tb := recv(t, startedB, "restart on B")
	if tb.UUID != ts[0].UUID || tb.Attempt != 2 {
		t.Errorf("B started %+v, want attempt 2 of %s", tb, ts[0].UUID)
	}
	if err := a.FinishAttempt(ctx, tk.UUID, tk.Attempt); !errors.Is(err, ErrStaleLease) {
		t.Errorf("A's finish: %v, want ErrStaleLease", err)
	}
	waitStatus(t, b, tb.UUID, StatusFinished)
}
