// Package registry starts the registry server a benchmark runs against and
// reads the server's own counters: one standalone ZooKeeper
// (regcenter/zktest), one etcd member in a process of its own
// (regcenter/etcdtest), the embedded default (regcenter/embedded, hosted
// by a process of its own: this program, started again), or one
// PostgreSQL server with synchronous commits (internal/testing/pgtest). It is what tools/firebench and tools/scalebench
// share: the start, the stop, the addresses, the configuration and opening
// of a center through regcenter.Open, the flags that name the server to an
// instance process, and the server's requests, watches, CPU, memory and
// data size.
//
// It links every registry's client; the separate bench module, which
// imports tools/benchkit, does not import it.
package registry

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardjob/shardjob/internal/testing/pgtest"
	"github.com/shardjob/shardjob/regcenter"
	_ "github.com/shardjob/shardjob/regcenter/etcd" // Etcd
	"github.com/shardjob/shardjob/regcenter/etcdtest"
	_ "github.com/shardjob/shardjob/regcenter/postgres" // Postgres
	"github.com/shardjob/shardjob/regcenter/zktest"
	_ "github.com/shardjob/shardjob/regcenter/zookeeper" // ZooKeeper
	"github.com/shardjob/shardjob/tools/benchkit"
)

// The registries a benchmark's -registry flag names.
const (
	ZooKeeper = "zookeeper"
	Etcd      = "etcd"
	Postgres  = "postgres"
	Embedded  = "embedded"
)

// Kinds lists the registries Start knows, in the order flags name them.
var Kinds = []string{ZooKeeper, Etcd, Postgres, Embedded}

// CheckKind returns an error naming kind when it is none of Kinds.
func CheckKind(kind string) error {
	if !slices.Contains(Kinds, kind) {
		return fmt.Errorf("%q is none of %s", kind, strings.Join(Kinds, ", "))
	}
	return nil
}

// ParseKinds parses a comma-separated list of kinds ("embedded,zookeeper"),
// each once.
func ParseKinds(list string) ([]string, error) {
	var out []string
	for _, k := range strings.Split(list, ",") {
		k = strings.TrimSpace(k)
		if err := CheckKind(k); err != nil {
			return nil, err
		}
		if slices.Contains(out, k) {
			return nil, fmt.Errorf("%q is named twice", k)
		}
		out = append(out, k)
	}
	return out, nil
}

// Options are what a benchmark may change in the server it starts. The
// zero value starts each server as firebench always has.
type Options struct {
	// ZooKeeperHeap is the JVM's -Xmx ("4g"); "" means "1g".
	ZooKeeperHeap string
}

// Registry is the server a benchmark runs against: one standalone
// ZooKeeper, one etcd member, each in a process of its own so that its CPU
// is its own and its heap is not the benchmark's, or one PostgreSQL server
// (its processes counted together).
type Registry struct {
	kind string
	dir  string
	zk   *zktest.Cluster
	etcd *etcdtest.Cluster
	pg   *pgtest.Server
	emb  *embeddedMember
	url  string // the PostgreSQL database the centers use
}

// Center is what a benchmark reads from a center besides the Center
// interface: every implementation counts its registered watches.
type Center interface {
	regcenter.Center
	WatchCount() int
}

// Start starts the server of kind with its data under dir.
func Start(ctx context.Context, kind, dir string, log *slog.Logger) (*Registry, error) {
	return StartWith(ctx, kind, dir, log, Options{})
}

// StartWith is Start with options.
func StartWith(ctx context.Context, kind, dir string, log *slog.Logger, o Options) (*Registry, error) {
	r := &Registry{kind: kind}
	var err error
	switch kind {
	case ZooKeeper:
		heap := o.ZooKeeperHeap
		if heap == "" {
			heap = "1g"
		}
		// The JVM's full compiler, as a production server runs it: zktest
		// stops at C1 for a fast start, which would inflate the server's CPU.
		r.dir = dir + "/zk"
		r.zk, err = zktest.StartCluster(ctx, zktest.Options{Dir: r.dir, Logger: log, JavaOpts: []string{"-XX:TieredStopAtLevel=4", "-Xmx" + heap}})
	case Etcd:
		r.dir = dir + "/etcd"
		r.etcd, err = etcdtest.StartCluster(ctx, etcdtest.Options{Size: 1, Processes: true, Dir: r.dir, Logger: log})
	case Postgres:
		// Synchronous commits, as a production server runs: pgtest's
		// default server turns them off for speed.
		if r.pg, err = pgtest.StartCrashSafe(ctx); err == nil {
			if r.url, err = r.pg.NewDatabase(ctx); err != nil {
				r.pg.Close()
			}
		}
	case Embedded:
		r.dir = dir + "/embedded"
		r.emb, err = startEmbedded(ctx, r.dir)
	default:
		return nil, fmt.Errorf("unknown registry: %w", CheckKind(kind))
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Kind is the registry's kind: ZooKeeper, Etcd, Postgres or Embedded.
func (r *Registry) Kind() string { return r.kind }

// Close stops the server.
func (r *Registry) Close() error {
	if r.pg != nil {
		return r.pg.Close()
	}
	if r.etcd != nil {
		return r.etcd.Close()
	}
	if r.emb != nil {
		return r.emb.close()
	}
	return r.zk.Close()
}

// Addrs returns the server's client addresses.
func (r *Registry) Addrs() []string {
	if r.pg != nil {
		return []string{"127.0.0.1:" + strconv.Itoa(r.pg.Port)}
	}
	if r.etcd != nil {
		return r.etcd.Endpoints()
	}
	if r.emb != nil {
		return []string{r.emb.endpoint}
	}
	return r.zk.Servers()
}

// PID returns the server's process id (PostgreSQL's postmaster).
func (r *Registry) PID() int {
	if r.pg != nil {
		if pids := r.pg.PIDs(); len(pids) > 0 {
			return pids[0]
		}
		return 0
	}
	if r.etcd != nil {
		return r.etcd.PID(0)
	}
	if r.emb != nil {
		return r.emb.proc.PID
	}
	return r.zk.PID(0)
}

// pids returns every process of the server: PostgreSQL's all, the others'
// one.
func (r *Registry) pids() []int {
	if r.pg != nil {
		return r.pg.PIDs()
	}
	return []int{r.PID()}
}

// Config returns the configuration of a center on the server under ns.
func (r *Registry) Config(ns string) regcenter.Config {
	if r.pg != nil {
		return regcenter.Config{URL: r.url, Namespace: ns}
	}
	if r.etcd != nil {
		return regcenter.Config{Etcd: r.Addrs(), Namespace: ns}
	}
	if r.emb != nil {
		// As a user's program reaches a member another process hosts.
		return regcenter.Config{EmbeddedDir: r.emb.dir, Namespace: ns}
	}
	return regcenter.Config{Servers: r.Addrs(), Namespace: ns}
}

// Open connects a center to the server under ns, through regcenter.Open as
// a user's program does.
func (r *Registry) Open(ctx context.Context, ns string, logger *slog.Logger) (Center, error) {
	rc, err := regcenter.Open(ctx, r.Config(ns), regcenter.WithLogger(logger))
	if err != nil {
		return nil, err
	}
	c, ok := rc.(Center)
	if !ok {
		rc.Close()
		return nil, fmt.Errorf("the %s center (%T) does not count its watches", r.kind, rc)
	}
	return c, nil
}

// InstanceArgs are an instance program's flags that name the server:
// -url, -etcd, -embedded or -servers.
func (r *Registry) InstanceArgs() []string {
	if r.pg != nil {
		return []string{"-url", r.url}
	}
	if r.emb != nil {
		return []string{"-embedded", r.emb.dir}
	}
	if r.etcd != nil {
		return []string{"-etcd", strings.Join(r.Addrs(), ",")}
	}
	return []string{"-servers", strings.Join(r.Addrs(), ",")}
}

// Line is a benchmark's first line about the server.
func (r *Registry) Line() string {
	return "bench " + r.kind + new(benchkit.KV).Add("servers", strings.Join(r.Addrs(), ",")).Add("pid", r.PID()).String()
}

// CPUTicks returns the server's CPU so far, in clock ticks: its process's,
// or on PostgreSQL its processes' together (see pgtest.Server.PIDs).
func (r *Registry) CPUTicks() (int64, error) {
	if r.pg == nil {
		return benchkit.CPUTicks(r.PID())
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

// RSS returns the server's resident memory in bytes: its process's, or on
// PostgreSQL its processes' together (shared memory counted in each).
func (r *Registry) RSS() (int64, error) {
	var sum int64
	var errs []error
	for _, pid := range r.pids() {
		n, err := benchkit.RSS(pid)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sum += n
	}
	if sum == 0 && len(errs) > 0 {
		return 0, errors.Join(errs...)
	}
	return sum, nil
}

// DataSize is what the server says of the size of the data it holds.
type DataSize struct {
	// Bytes is the server's own figure: ZooKeeper's
	// zk_approximate_data_size (the nodes' data and paths in memory),
	// etcd's etcd_mvcc_db_total_size_in_use_in_bytes, PostgreSQL's
	// pg_database_size of the centers' database.
	Bytes int64
	// DiskBytes is the size of the server's data directory (ZooKeeper's
	// snapshots and transaction logs, etcd's db and WAL); 0 on
	// PostgreSQL, whose figure is Bytes.
	DiskBytes int64
	// Nodes is how many nodes or keys the server holds: ZooKeeper's
	// zk_znode_count, etcd's etcd_debugging_mvcc_keys_total; PostgreSQL's
	// rows are not counted (0).
	Nodes int64
}

// DataSize reads the size of the server's data.
func (r *Registry) DataSize(ctx context.Context) (DataSize, error) {
	var d DataSize
	var err error
	switch {
	case r.pg != nil:
		d.Bytes, err = r.pgInt(ctx, "SELECT pg_database_size(current_database())")
		return d, err
	case r.etcd != nil || r.emb != nil:
		if d.Bytes, err = r.etcdMetric(ctx, "etcd_mvcc_db_total_size_in_use_in_bytes"); err != nil {
			return d, err
		}
		if d.Nodes, err = r.etcdMetric(ctx, "etcd_debugging_mvcc_keys_total"); err != nil {
			return d, err
		}
	default:
		m, err := r.mntr(ctx)
		if err != nil {
			return d, err
		}
		if d.Bytes, err = benchkit.MntrInt(m, "zk_approximate_data_size"); err != nil {
			return d, err
		}
		if d.Nodes, err = benchkit.MntrInt(m, "zk_znode_count"); err != nil {
			return d, err
		}
	}
	d.DiskBytes, err = dirSize(r.dir)
	return d, err
}

// dirSize sums the sizes of the regular files under dir.
func dirSize(dir string) (int64, error) {
	var sum int64
	err := filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a log rolled meanwhile
			}
			return err
		}
		if !e.Type().IsRegular() {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		sum += info.Size()
		return nil
	})
	return sum, err
}

// mntr returns ZooKeeper's mntr answer.
func (r *Registry) mntr(ctx context.Context) (map[string]string, error) {
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	ans, err := zktest.FourLetter(fctx, r.zk.Servers()[0], "mntr")
	cancel()
	if err != nil {
		return nil, err
	}
	return benchkit.ParseMntr(ans), nil
}

// ServerRequests returns what the server counts as received so far:
// ZooKeeper's zk_packets_received (requests, pings and the four-letter
// word itself), or on etcd the gRPC messages its client port received
// (grpc_server_msg_received_total, every service and method: each range,
// txn and lease keepalive, and each watch request on a stream), or on
// PostgreSQL the transactions of the centers' database.
func (r *Registry) ServerRequests(ctx context.Context) (int64, error) {
	if r.pg != nil {
		return r.pgTransactions(ctx)
	}
	if r.etcd != nil || r.emb != nil {
		return r.etcdMetric(ctx, "grpc_server_msg_received_total")
	}
	m, err := r.mntr(ctx)
	if err != nil {
		return 0, err
	}
	return benchkit.MntrInt(m, "zk_packets_received")
}

// ServerWatches returns the server's watch count: ZooKeeper's wchs total
// (data watches only), or etcd's watchers (etcd_debugging_mvcc_watcher_total:
// one per watch on a stream, however many keys it covers). PostgreSQL
// keeps none: its error says so.
func (r *Registry) ServerWatches(ctx context.Context) (int64, error) {
	if r.pg != nil {
		return 0, errors.New("PostgreSQL keeps no watches: a center watches by reading the change log (its own WatchCount)")
	}
	if r.etcd != nil || r.emb != nil {
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
func (r *Registry) pgTransactions(ctx context.Context) (int64, error) {
	return r.pgInt(ctx, "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()")
}

// pgInt runs a query of one integer in the centers' database.
func (r *Registry) pgInt(ctx context.Context, query string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, r.url)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, query).Scan(&n)
	return n, err
}

// etcdMetric returns the sum of every sample of the metric family name on
// the member's /metrics page.
func (r *Registry) etcdMetric(ctx context.Context, name string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.Addrs()[0]+"/metrics", nil)
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
	return SumMetric(bufio.NewScanner(resp.Body), name)
}

// SumMetric sums the samples of the metric family name in a Prometheus
// text exposition.
func SumMetric(sc *bufio.Scanner, name string) (int64, error) {
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
