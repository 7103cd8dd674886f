package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardjob/shardjob/internal/testing/pgtest"
	"github.com/shardjob/shardjob/regcenter"
	_ "github.com/shardjob/shardjob/regcenter/etcd" // -registry etcd
	"github.com/shardjob/shardjob/regcenter/etcdtest"
	_ "github.com/shardjob/shardjob/regcenter/postgres" // -registry postgres
	"github.com/shardjob/shardjob/regcenter/zktest"
	_ "github.com/shardjob/shardjob/regcenter/zookeeper" // -registry zookeeper
	"github.com/shardjob/shardjob/tools/benchkit"
)

// The registries -registry names.
const (
	regZooKeeper = "zookeeper"
	regEtcd      = "etcd"
	regPostgres  = "postgres"
)

// registry is the server the bench runs against: one standalone
// ZooKeeper, or one etcd member, each in a process of its own so that its
// CPU is its own and its heap is not the bench's.
type registry struct {
	kind string
	zk   *zktest.Cluster
	etcd *etcdtest.Cluster
	pg   *pgtest.Server
	url  string // the PostgreSQL database the centers use
}

// center is what the bench reads from a center besides the Center
// interface: both implementations count their registered watches.
type center interface {
	regcenter.Center
	WatchCount() int
}

// startRegistry starts the server of kind with its data under dir.
func startRegistry(ctx context.Context, kind, dir string, log *slog.Logger) (*registry, error) {
	r := &registry{kind: kind}
	var err error
	switch kind {
	case regZooKeeper:
		// The JVM's full compiler, as a production server runs it: zktest
		// stops at C1 for a fast start, which would inflate the server's CPU.
		r.zk, err = zktest.StartCluster(ctx, zktest.Options{Dir: dir + "/zk", Logger: log, JavaOpts: []string{"-XX:TieredStopAtLevel=4", "-Xmx1g"}})
	case regEtcd:
		r.etcd, err = etcdtest.StartCluster(ctx, etcdtest.Options{Size: 1, Processes: true, Dir: dir + "/etcd", Logger: log})
	case regPostgres:
		// Synchronous commits, as a production server runs: pgtest's
		// default server turns them off for speed.
		if r.pg, err = pgtest.StartCrashSafe(ctx); err == nil {
			if r.url, err = r.pg.NewDatabase(ctx); err != nil {
				r.pg.Close()
			}
		}
	default:
		return nil, fmt.Errorf("unknown registry %q (want %s, %s or %s)", kind, regZooKeeper, regEtcd, regPostgres)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Close stops the server.
func (r *registry) Close() error {
	if r.pg != nil {
		return r.pg.Close()
	}
	if r.etcd != nil {
		return r.etcd.Close()
	}
	return r.zk.Close()
}

// addrs returns the server's client addresses.
func (r *registry) addrs() []string {
	if r.pg != nil {
		return []string{"127.0.0.1:" + strconv.Itoa(r.pg.Port)}
	}
	if r.etcd != nil {
		return r.etcd.Endpoints()
	}
	return r.zk.Servers()
}

// pid returns the server's process id (PostgreSQL's postmaster).
func (r *registry) pid() int {
	if r.pg != nil {
		if pids := r.pg.PIDs(); len(pids) > 0 {
			return pids[0]
		}
		return 0
	}
	if r.etcd != nil {
		return r.etcd.PID(0)
	}
	return r.zk.PID(0)
}

// config returns the configuration of a center on the server under ns.
func (r *registry) config(ns string) regcenter.Config {
	if r.pg != nil {
		return regcenter.Config{URL: r.url, Namespace: ns}
	}
	if r.etcd != nil {
		return regcenter.Config{Etcd: r.addrs(), Namespace: ns}
	}
	return regcenter.Config{Servers: r.addrs(), Namespace: ns}
}

// open connects a center to the server under ns, through regcenter.Open as
// a user's program does.
func (r *registry) open(ctx context.Context, ns string, logger *slog.Logger) (center, error) {
	rc, err := regcenter.Open(ctx, r.config(ns), regcenter.WithLogger(logger))
	if err != nil {
		return nil, err
	}
	c, ok := rc.(center)
	if !ok {
		rc.Close()
		return nil, fmt.Errorf("the %s center (%T) does not count its watches", r.kind, rc)
	}
	return c, nil
}

// instanceArgs are the instance program's flags that name the server.
func (r *registry) instanceArgs() []string {
	if r.pg != nil {
		return []string{"-url", r.url}
	}
	if r.etcd != nil {
		return []string{"-etcd", strings.Join(r.addrs(), ",")}
	}
	return []string{"-servers", strings.Join(r.addrs(), ",")}
}

// line is the bench's first line about the server.
func (r *registry) line() string {
	return "bench " + r.kind + new(benchkit.KV).Add("servers", strings.Join(r.addrs(), ",")).Add("pid", r.pid()).String()
}

// cpuTicks returns the server's CPU so far, in clock ticks: its process's,
// or on PostgreSQL its processes' together (see pgtest.Server.PIDs).
func (r *registry) cpuTicks() (int64, error) {
	if r.pg == nil {
		return benchkit.CPUTicks(r.pid())
	}
	var sum int64
	for _, pid := range r.pg.PIDs() {
		t, err := benchkit.CPUTicks(pid)
		if err != nil {
			continue // a backend that ended meanwhile
		}
		sum += t
	}
	return sum, nil
}

// serverRequests returns what the server counts as received so far:
// ZooKeeper's zk_packets_received (requests, pings and the four-letter
// word itself), or on etcd the gRPC messages its client port received
// (grpc_server_msg_received_total, every service and method: each range,
// txn and lease keepalive, and each watch request on a stream).
func (r *registry) serverRequests(ctx context.Context) (int64, error) {
	if r.pg != nil {
		return r.pgTransactions(ctx)
	}
	if r.etcd != nil {
		return r.etcdMetric(ctx, "grpc_server_msg_received_total")
	}
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	ans, err := zktest.FourLetter(fctx, r.zk.Servers()[0], "mntr")
	cancel()
	if err != nil {
		return 0, err
	}
	return benchkit.MntrInt(benchkit.ParseMntr(ans), "zk_packets_received")
}

// serverWatches returns the server's watch count: ZooKeeper's wchs total
// (data watches only), or etcd's watchers (etcd_debugging_mvcc_watcher_total:
// one per watch on a stream, however many keys it covers).
func (r *registry) serverWatches(ctx context.Context) (int64, error) {
	if r.pg != nil {
		return 0, errors.New("PostgreSQL keeps no watches: a center watches by reading the change log (its own WatchCount)")
	}
	if r.etcd != nil {
		return r.etcdMetric(ctx, "etcd_debugging_mvcc_watcher_total")
	}
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	ans, err := zktest.FourLetter(fctx, r.zk.Servers()[0], "wchs")
	cancel()
	if err != nil {
		return 0, err
	}
	_, _, total, err := benchkit.ParseWchs(ans)
	return total, err
}

// pgTransactions returns the transactions PostgreSQL counts in the
// centers' database so far (committed and rolled back, this query's own
// included): on PostgreSQL each request of a center is one. The counts
// reach pg_stat_database within a second of a transaction's end.
func (r *registry) pgTransactions(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, r.url)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()").Scan(&n)
	return n, err
}

// etcdMetric returns the sum of every sample of the metric family name on
// the member's /metrics page.
func (r *registry) etcdMetric(ctx context.Context, name string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.addrs()[0]+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("etcd /metrics: %s", resp.Status)
	}
	return sumMetric(bufio.NewScanner(resp.Body), name)
}

// sumMetric sums the samples of the metric family name in a Prometheus
// text exposition.
func sumMetric(sc *bufio.Scanner, name string) (int64, error) {
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	var sum float64
	found := false
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		if i := strings.LastIndexByte(rest, '}'); i >= 0 {
			rest = rest[i+1:]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0, fmt.Errorf("metric %s: no value in %q", name, line)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return 0, fmt.Errorf("metric %s: %w", name, err)
		}
		sum += v
		found = true
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if !found {
		return 0, fmt.Errorf("metric %s not served", name)
	}
	return int64(sum), nil
}
