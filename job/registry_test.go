package job_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/testing/leakcheck"
	"github.com/shardjob/shardjob/internal/testing/pgtest"
	"github.com/shardjob/shardjob/regcenter"
	_ "github.com/shardjob/shardjob/regcenter/etcd" // regcenter.Open serves Config.Etcd
	"github.com/shardjob/shardjob/regcenter/etcdtest"
	_ "github.com/shardjob/shardjob/regcenter/postgres" // regcenter.Open serves postgres:// URLs
	"github.com/shardjob/shardjob/regcenter/zktest"
	_ "github.com/shardjob/shardjob/regcenter/zookeeper" // regcenter.Open serves Config.Servers
)

// registryEnv picks the registry this package's cluster tests run on:
// "zookeeper" (the default), "etcd" or "postgres". The same tests run on
// each, as a test matrix: SHARDJOB_TEST_REGISTRY=etcd go test ./job/.
// PostgreSQL is a throwaway server (internal/testing/pgtest; bash
// scripts/postgresql.sh ensure installs it) started once per test binary.
const registryEnv = "SHARDJOB_TEST_REGISTRY"

// testRegistry is registryEnv's value, checked in TestMain.
var testRegistry = strings.ToLower(strings.TrimSpace(os.Getenv(registryEnv)))

// The shared registry of the package's tests: one of them is set.
var (
	zk   *zktest.Cluster
	etcd *etcdtest.Cluster
	pg   *pgtest.Server
)

// pgURL is the database the tests share on pg: one database, each test in
// a namespace of its own, as on the other registries.
var pgURL string

func TestMain(m *testing.M) {
	switch testRegistry {
	case "", "zookeeper":
		testRegistry = "zookeeper"
		os.Exit(zktest.RunTests(leakcheck.Checked(m), &zk))
	case "etcd":
		os.Exit(etcdtest.RunTests(leakcheck.Checked(m), &etcd))
	case "postgres", "postgresql":
		testRegistry = "postgres"
		os.Exit(pgtest.RunTests(withDatabase{leakcheck.Checked(m)}, &pg))
	default:
		fmt.Fprintf(os.Stderr, "%s=%q: use zookeeper, etcd or postgres\n", registryEnv, testRegistry)
		os.Exit(2)
	}
}

// withDatabase runs the tests once pg is up, on a database of their own
// made for them (pgURL).
type withDatabase struct{ m interface{ Run() int } }

func (w withDatabase) Run() int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	u, err := pg.NewDatabase(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	pgURL = u
	return w.m.Run()
}

// onRegistry returns cfg pointed at the tests' registry: its Servers, its
// Etcd endpoints or its URL set, the others cleared.
func onRegistry(cfg regcenter.Config) regcenter.Config {
	cfg.Servers, cfg.Etcd, cfg.URL = nil, nil, ""
	switch {
	case etcd != nil:
		cfg.Etcd = etcd.Endpoints()
	case pg != nil:
		cfg.URL = pgURL
	default:
		cfg.Servers = zk.Servers()
	}
	return cfg
}

// registryYAML is the regcenter section's key naming the tests' registry,
// as a YAML line: "servers: [...]", "etcd: [...]" or "url: ...".
func registryYAML() string {
	cfg := onRegistry(regcenter.Config{})
	switch {
	case len(cfg.Etcd) > 0:
		return "etcd: [" + strings.Join(cfg.Etcd, ", ") + "]"
	case cfg.URL != "":
		return "url: " + strconv.Quote(cfg.URL)
	}
	return "servers: [" + strings.Join(cfg.Servers, ", ") + "]"
}

// registryProxy starts a proxy to the tests' registry (its first member)
// that can cut the clients behind it off, closed when t ends: zktest.Proxy
// is a plain TCP forwarder, which carries ZooKeeper's, etcd's and
// PostgreSQL's protocols alike.
func registryProxy(t *testing.T) *zktest.Proxy {
	t.Helper()
	var target string
	switch {
	case etcd != nil:
		target = strings.TrimPrefix(strings.TrimPrefix(etcd.Endpoints()[0], "http://"), "https://")
	case pg != nil:
		target = net.JoinHostPort("127.0.0.1", strconv.Itoa(pg.Port))
	default:
		target = zk.Servers()[0]
	}
	proxy, err := zktest.NewProxy(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	return proxy
}

// viaProxy returns cfg pointed at the tests' registry through proxy.
func viaProxy(t *testing.T, proxy *zktest.Proxy, cfg regcenter.Config) regcenter.Config {
	t.Helper()
	cfg = onRegistry(cfg)
	switch {
	case len(cfg.Etcd) > 0:
		cfg.Etcd = []string{proxy.Addr()}
		return cfg
	case cfg.URL == "":
		cfg.Servers = []string{proxy.Addr()}
		return cfg
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = proxy.Addr()
	cfg.URL = u.String()
	return cfg
}

// needCutOff skips a test that cuts one instance off the registry with
// registryProxy when the tests run on etcd, where those tests do not run
// (ZooKeeper and PostgreSQL run them).
func needCutOff(t *testing.T) {
	t.Helper()
	if etcd != nil {
		t.Skipf("on %s: this test runs on ZooKeeper and PostgreSQL", testRegistry)
	}
}
