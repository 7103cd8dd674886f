package etcd_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/centertest"
	"github.com/shardjob/shardjob/regcenter/etcd"
	"github.com/shardjob/shardjob/regcenter/etcdtest"
)

// etcdSessionTimeout is the lease TTL of the etcd centers the tests make:
// short, so that a lost lease is noticed within seconds, and long enough
// for a loaded machine running -race (at 4 s, a third of it for the
// keepalive to be answered, a create was abandoned with the session on a
// machine running three race builds).
const etcdSessionTimeout = 10 * time.Second

// TestEtcdConformance runs the conformance suite every Center must pass
// against etcd, on a member of its own (the suite restarts it).
func TestEtcdConformance(t *testing.T) {
	centertest.Run(t, etcdFactory(etcdtest.Start(t)))
}

// etcdFactory makes centers on cluster for the conformance suite: a
// session expires by revoking its lease, as etcd does when it times out.
func etcdFactory(cluster *etcdtest.Cluster) centertest.Factory {
	return centertest.Factory{
		New: func(tb testing.TB, namespace string) regcenter.Center {
			tb.Helper()
			return newEtcdCenter(tb, cluster, regcenter.Config{Namespace: namespace})
		},
		ExpireSession: func(tb testing.TB, c regcenter.Center) {
			tb.Helper()
			revokeSession(tb, cluster, c.Session())
		},
		Restart: func(tb testing.TB) {
			tb.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := cluster.RestartAll(ctx); err != nil {
				tb.Fatal(err)
			}
		},
	}
}

// newEtcdCenter connects to cluster with cfg (its endpoints and a short
// session filled in) and closes the center when tb ends.
func newEtcdCenter(tb testing.TB, cluster *etcdtest.Cluster, cfg regcenter.Config) *etcd.Center {
	tb.Helper()
	cfg.Etcd = cluster.Endpoints()
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = etcdSessionTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := etcd.Open(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := c.Close(); err != nil {
			tb.Errorf("close: %v", err)
		}
	})
	return c
}

// revokeSession ends s on the server: its lease is revoked, its keys are
// gone when this returns.
func revokeSession(tb testing.TB, cluster *etcdtest.Cluster, s *regcenter.Session) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := cluster.Client(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Revoke(ctx, clientv3.LeaseID(s.ID())); err != nil {
		tb.Fatalf("revoking lease %x: %v", s.ID(), err)
	}
}
