package main

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/testing/pgtest"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
)

func TestParseFlagsRegistry(t *testing.T) {
	c, err := parseFlags([]string{"-requests"})
	if err != nil || c.registry != regZooKeeper {
		t.Fatalf("default registry %q, %v; want %q", c.registry, err, regZooKeeper)
	}
	c, err = parseFlags([]string{"-requests", "-registry", "etcd"})
	if err != nil || c.registry != regEtcd {
		t.Fatalf("-registry etcd: %q, %v", c.registry, err)
	}
	_, err = parseFlags([]string{"-requests", "-registry", "consul"})
	if err == nil || !strings.Contains(err.Error(), `"consul"`) {
		t.Fatalf("-registry consul: %v; want an error naming it", err)
	}
}

func TestSumMetric(t *testing.T) {
	page := `# HELP grpc_server_msg_received_total Total number of RPC stream messages received on the server.
# TYPE grpc_server_msg_received_total counter
grpc_server_msg_received_total{grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"} 7
grpc_server_msg_received_total{grpc_method="Txn",grpc_service="etcdserverpb.KV",grpc_type="unary"} 5
grpc_server_msg_received_total_other 100
grpc_server_msg_received_totally{a="b"} 1000
etcd_debugging_mvcc_watcher_total 3
`
	n, err := sumMetric(bufio.NewScanner(strings.NewReader(page)), "grpc_server_msg_received_total")
	if err != nil || n != 12 {
		t.Fatalf("got %d, %v; want 12", n, err)
	}
	n, err = sumMetric(bufio.NewScanner(strings.NewReader(page)), "etcd_debugging_mvcc_watcher_total")
	if err != nil || n != 3 {
		t.Fatalf("got %d, %v; want 3", n, err)
	}
	if _, err := sumMetric(bufio.NewScanner(strings.NewReader(page)), "missing_total"); err == nil {
		t.Fatal("a metric not on the page: no error")
	}
}

func TestQuiet(t *testing.T) {
	for _, c := range []struct {
		d    regcenter.Stats
		want bool
	}{
		{regcenter.Stats{Backend: regcenter.BackendZooKeeper}, true},
		{regcenter.Stats{Writes: 1, Backend: regcenter.BackendZooKeeper}, false},
		{regcenter.Stats{Backend: regcenter.BackendEtcd}, true},
		{regcenter.Stats{Writes: 1, Backend: regcenter.BackendEtcd}, false}, // a write is one txn
		{regcenter.Stats{Reads: 1, Writes: 1, Backend: regcenter.BackendEtcd}, false},
		{regcenter.Stats{Multis: 1, Backend: regcenter.BackendEtcd}, false},
		{regcenter.Stats{Watches: 1, Backend: regcenter.BackendZooKeeper}, false},
	} {
		if got := quiet(c.d); got != c.want {
			t.Errorf("quiet(%+v) = %v, want %v", c.d, got, c.want)
		}
	}
}

// TestRegistryCounts starts each registry as the bench does and checks
// that a center opened on it counts its requests and watches, and that
// the server's counters see them.
func TestRegistryCounts(t *testing.T) {
	for _, kind := range []string{regZooKeeper, regEtcd, regPostgres} {
		t.Run(kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			r, err := startRegistry(ctx, kind, t.TempDir(), slog.New(slog.DiscardHandler))
			if errors.Is(err, zktest.ErrNotInstalled) || errors.Is(err, pgtest.ErrNotInstalled) {
				t.Skip(err)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := r.Close(); err != nil {
					t.Error(err)
				}
			}()
			if r.pid() <= 0 {
				t.Errorf("the %s server runs in no process of its own (pid %d)", kind, r.pid())
			}
			rc, err := r.open(ctx, "t", slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			if got := rc.Stats().Backend; got == "" {
				t.Errorf("Stats names no backend")
			}
			p0, err := r.serverRequests(ctx)
			if err != nil {
				t.Fatal(err)
			}
			w0, err := r.serverWatches(ctx)
			if err != nil && kind != regPostgres { // PostgreSQL keeps no watches
				t.Fatal(err)
			}
			s0 := rc.Stats()
			for range 5 {
				if _, err := rc.Create(ctx, "/a", nil, regcenter.Persistent); err != nil && !errors.Is(err, regcenter.ErrNodeExists) {
					t.Fatal(err)
				}
			}
			if _, stop, err := rc.WatchNow(ctx, "/a", regcenter.WatchNode, func(regcenter.Event) {}); err != nil {
				t.Fatal(err)
			} else {
				defer stop()
			}
			if d := rc.Stats().Sub(s0).Total(); d < 5 {
				t.Errorf("the center counted %d requests for 5 creates and a watch", d)
			}
			if rc.WatchCount() < 1 {
				t.Errorf("the center counts %d watches, want at least 1", rc.WatchCount())
			}
			// PostgreSQL's counts reach pg_stat_database within a second
			// or so of a transaction's end: read until they have.
			var p1 int64
			for deadline := time.Now().Add(30 * time.Second); ; {
				if p1, err = r.serverRequests(ctx); err != nil {
					t.Fatal(err)
				}
				if p1-p0 >= 5 || kind != regPostgres || time.Now().After(deadline) {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			if p1-p0 < 5 {
				t.Errorf("the server counted %d requests for 5 creates", p1-p0)
			}
			if kind == regPostgres {
				if c, err := r.cpuTicks(); err != nil || c <= 0 {
					t.Errorf("PostgreSQL's processes used %d ticks (%v)", c, err)
				}
				return
			}
			w1, err := r.serverWatches(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if kind == regZooKeeper && w1-w0 < 1 {
				t.Errorf("ZooKeeper counts %d new watches, want at least 1", w1-w0)
			}
			if kind == regEtcd && w1 < 1 {
				// One etcd watch on the namespace serves every watch.
				t.Errorf("etcd counts %d watchers, want at least 1", w1)
			}
		})
	}
}
