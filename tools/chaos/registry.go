package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardjob/shardjob/internal/testing/pgtest"
	"github.com/shardjob/shardjob/regcenter"
	_ "github.com/shardjob/shardjob/regcenter/etcd" // regcenter.Open serves Config.Etcd
	"github.com/shardjob/shardjob/regcenter/etcdtest"
	_ "github.com/shardjob/shardjob/regcenter/postgres" // regcenter.Open serves postgres:// URLs
	"github.com/shardjob/shardjob/regcenter/zktest"
	_ "github.com/shardjob/shardjob/regcenter/zookeeper" // regcenter.Open serves Config.Servers
)

// The registries the harness runs on (-registry).
const (
	registryZooKeeper = "zookeeper"
	registryEtcd      = "etcd"
	registryPostgres  = "postgres"
)

var registries = []string{registryZooKeeper, registryEtcd, registryPostgres}

// cluster is the three-member registry cluster under test, whichever its
// kind: the faults act on its members through this.
type cluster interface {
	// addrs returns the members' client addresses, in member order.
	addrs() []string
	// config returns a regcenter config naming addrs as this registry's
	// endpoints.
	config(addrs []string, sessionTimeout time.Duration) regcenter.Config
	// leader returns the index of the member that leads now.
	leader(ctx context.Context) (int, error)
	// kill kills member i with SIGKILL.
	kill(i int) error
	// startMember starts stopped member i again, with its data.
	startMember(ctx context.Context, i int) error
	// restartAll stops every member and starts them all again.
	restartAll(ctx context.Context) error
	// restartWiped replaces member i by a member with no data, which
	// catches up from the others.
	restartWiped(ctx context.Context, i int) error
	// pause freezes member i (SIGSTOP); resume continues it.
	pause(i int) error
	resume(i int) error
	// waitServing waits until every running member serves with a leader.
	waitServing(ctx context.Context) error
	close() error
}

// startRegistry starts a cluster of size members of the named registry,
// with its data and logs under dir.
func startRegistry(ctx context.Context, registry, dir string, size int, log *slog.Logger) (cluster, error) {
	switch registry {
	case registryZooKeeper:
		c, err := zktest.StartCluster(ctx, zktest.Options{Size: size, Dir: dir, Logger: log})
		if err != nil {
			return nil, err
		}
		return zkCluster{c}, nil
	case registryEtcd:
		c, err := etcdtest.StartCluster(ctx, etcdtest.Options{Size: size, Dir: dir, Logger: log})
		if err != nil {
			return nil, err
		}
		return etcdCluster{c}, nil
	case registryPostgres:
		// One server: PostgreSQL's own replication is not shardjob's
		// concern. It keeps every acknowledged commit through a kill -9,
		// as a real server does (pgtest.StartCrashSafe).
		s, err := pgtest.StartCrashSafe(ctx)
		if err != nil {
			return nil, err
		}
		log.Info("PostgreSQL serving", "addr", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)), "dir", s.Dir)
		return pgCluster{s}, nil
	}
	return nil, fmt.Errorf("unknown registry %q (have %s)", registry, strings.Join(registries, ","))
}

// shortName prefixes the run directory's files about the registry: the
// members' directory, the cluster's log, the dumps of the job's tree.
func shortName(registry string) string {
	if registry == registryZooKeeper {
		return "zk"
	}
	return registry
}

type zkCluster struct{ c *zktest.Cluster }

func (z zkCluster) addrs() []string { return z.c.Servers() }
func (z zkCluster) config(addrs []string, st time.Duration) regcenter.Config {
	return regcenter.Config{Servers: addrs, Namespace: namespace, SessionTimeout: st}
}
func (z zkCluster) leader(ctx context.Context) (int, error)      { return z.c.Leader(ctx) }
func (z zkCluster) kill(i int) error                             { return z.c.Kill(i) }
func (z zkCluster) startMember(ctx context.Context, i int) error { return z.c.StartMember(ctx, i) }
func (z zkCluster) restartAll(ctx context.Context) error         { return z.c.RestartAll(ctx) }
func (z zkCluster) waitServing(ctx context.Context) error        { return z.c.WaitServing(ctx) }
func (z zkCluster) close() error                                 { return z.c.Close() }
func (z zkCluster) restartWiped(ctx context.Context, i int) error {
	return errors.New("zookeeper: a member restarted with its data wiped is not among this registry's faults")
}
func (z zkCluster) pause(i int) error {
	return errors.New("zookeeper: a frozen member is not among this registry's faults")
}
func (z zkCluster) resume(i int) error { return z.pause(i) }

type etcdCluster struct{ c *etcdtest.Cluster }

func (e etcdCluster) addrs() []string { return e.c.Endpoints() }
func (e etcdCluster) config(addrs []string, st time.Duration) regcenter.Config {
	return regcenter.Config{Etcd: addrs, Namespace: namespace, SessionTimeout: st}
}

// leader asks the members' Status API which of them leads.
func (e etcdCluster) leader(ctx context.Context) (int, error)       { return e.c.Leader(ctx) }
func (e etcdCluster) kill(i int) error                              { return e.c.Kill(i) }
func (e etcdCluster) startMember(ctx context.Context, i int) error  { return e.c.StartMember(ctx, i) }
func (e etcdCluster) restartAll(ctx context.Context) error          { return e.c.RestartAll(ctx) }
func (e etcdCluster) restartWiped(ctx context.Context, i int) error { return e.c.RestartWiped(ctx, i) }
func (e etcdCluster) waitServing(ctx context.Context) error         { return e.c.WaitServing(ctx) }
func (e etcdCluster) pause(i int) error                             { return e.c.Pause(i) }
func (e etcdCluster) resume(i int) error                            { return e.c.Resume(i) }
func (e etcdCluster) close() error                                  { return e.c.Close() }

// pgCluster is one PostgreSQL server, member 0: its faults (a kill -9, a
// restart, a freeze) take the whole registry away for their time.
type pgCluster struct{ s *pgtest.Server }

// pgURL is the URL of the server at addr (host:port): its "postgres"
// database as the superuser, trusted on loopback. The instance process
// builds the same (tools/chaos/instance).
func pgURL(addr string) string {
	return "postgres://postgres@" + addr + "/postgres?sslmode=disable"
}

func (p pgCluster) addrs() []string {
	return []string{net.JoinHostPort("127.0.0.1", strconv.Itoa(p.s.Port))}
}
func (p pgCluster) config(addrs []string, st time.Duration) regcenter.Config {
	return regcenter.Config{URL: pgURL(addrs[0]), Namespace: namespace, SessionTimeout: st}
}
func (p pgCluster) leader(ctx context.Context) (int, error)      { return 0, nil }
func (p pgCluster) kill(i int) error                             { return p.s.Kill() }
func (p pgCluster) startMember(ctx context.Context, i int) error { return p.s.Restart(ctx) }
func (p pgCluster) restartAll(ctx context.Context) error {
	if err := p.s.Stop(); err != nil {
		return err
	}
	return p.s.Restart(ctx)
}
func (p pgCluster) restartWiped(ctx context.Context, i int) error {
	return errors.New("postgres: a server restarted with its data wiped is not among this registry's faults")
}
func (p pgCluster) pause(i int) error  { return p.s.Pause() }
func (p pgCluster) resume(i int) error { return p.s.Resume() }
func (p pgCluster) close() error       { return p.s.Close() }

// waitServing waits until the server answers a query.
func (p pgCluster) waitServing(ctx context.Context) error {
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(cctx, p.s.DSN)
		if err == nil {
			_, err = conn.Exec(cctx, "SELECT 1")
			conn.Close(cctx)
		}
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("postgres not serving: %w (last: %v)", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
