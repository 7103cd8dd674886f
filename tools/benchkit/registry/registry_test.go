package registry

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

func TestSumMetric(t *testing.T) {
	page := `# HELP grpc_server_msg_received_total Total number of RPC stream messages received on the server.
# TYPE grpc_server_msg_received_total counter
grpc_server_msg_received_total{grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"} 7
grpc_server_msg_received_total{grpc_method="Txn",grpc_service="etcdserverpb.KV",grpc_type="unary"} 5
grpc_server_msg_received_total_other 100
grpc_server_msg_received_totally{a="b"} 1000
etcd_debugging_mvcc_watcher_total 3
`
	n, err := SumMetric(bufio.NewScanner(strings.NewReader(page)), "grpc_server_msg_received_total")
	if err != nil || n != 12 {
		t.Fatalf("got %d, %v; want 12", n, err)
	}
	n, err = SumMetric(bufio.NewScanner(strings.NewReader(page)), "etcd_debugging_mvcc_watcher_total")
	if err != nil || n != 3 {
		t.Fatalf("got %d, %v; want 3", n, err)
	}
	if _, err := SumMetric(bufio.NewScanner(strings.NewReader(page)), "missing_total"); err == nil {
		t.Fatal("a metric not on the page: no error")
	}
}

// TestRegistryCounts starts each registry as the bench does and checks
// that a center opened on it counts its requests and watches, and that
// the server's counters see them.
func TestRegistryCounts(t *testing.T) {
	for _, kind := range []string{ZooKeeper, Etcd, Postgres} {
		t.Run(kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			r, err := Start(ctx, kind, t.TempDir(), slog.New(slog.DiscardHandler))
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
			if r.PID() <= 0 {
				t.Errorf("the %s server runs in no process of its own (pid %d)", kind, r.PID())
			}
			rc, err := r.Open(ctx, "t", slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			if got := rc.Stats().Backend; got == "" {
				t.Errorf("Stats names no backend")
			}
			p0, err := r.ServerRequests(ctx)
			if err != nil {
				t.Fatal(err)
			}
			w0, err := r.ServerWatches(ctx)
			if err != nil && kind != Postgres { // PostgreSQL keeps no watches
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
				if p1, err = r.ServerRequests(ctx); err != nil {
					t.Fatal(err)
				}
				if p1-p0 >= 5 || kind != Postgres || time.Now().After(deadline) {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			if p1-p0 < 5 {
				t.Errorf("the server counted %d requests for 5 creates", p1-p0)
			}
			if n, err := r.RSS(); err != nil || n <= 0 {
				t.Errorf("the %s server's RSS: %d (%v)", kind, n, err)
			}
			if d, err := r.DataSize(ctx); err != nil || d.Bytes <= 0 {
				t.Errorf("the %s server's data size: %+v (%v)", kind, d, err)
			} else if kind != Postgres && (d.Nodes <= 0 || d.DiskBytes <= 0) {
				t.Errorf("the %s server's nodes and files: %+v", kind, d)
			}
			if kind == Postgres {
				if c, err := r.CPUTicks(); err != nil || c <= 0 {
					t.Errorf("PostgreSQL's processes used %d ticks (%v)", c, err)
				}
				return
			}
			w1, err := r.ServerWatches(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if kind == ZooKeeper && w1-w0 < 1 {
				t.Errorf("ZooKeeper counts %d new watches, want at least 1", w1-w0)
			}
			if kind == Etcd && w1 < 1 {
				// One etcd watch on the namespace serves every watch.
				t.Errorf("etcd counts %d watchers, want at least 1", w1)
			}
		})
	}
}
