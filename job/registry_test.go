package job_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/shardjob/shardjob/internal/testing/leakcheck"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/etcdtest"
	"github.com/shardjob/shardjob/regcenter/zktest"
)

// registryEnv picks the registry this package's cluster tests run on:
// "zookeeper" (the default) or "etcd". The same tests run on either, as a
// test matrix: SHARDJOB_TEST_REGISTRY=etcd go test ./job/.
const registryEnv = "SHARDJOB_TEST_REGISTRY"

// testRegistry is registryEnv's value, checked in TestMain.
var testRegistry = strings.ToLower(strings.TrimSpace(os.Getenv(registryEnv)))

// The shared registry of the package's tests: one of them is set.
var (
	zk   *zktest.Cluster
	etcd *etcdtest.Cluster
)

func TestMain(m *testing.M) {
	switch testRegistry {
	case "", "zookeeper":
		testRegistry = "zookeeper"
		os.Exit(zktest.RunTests(leakcheck.Checked(m), &zk))
	case "etcd":
		os.Exit(etcdtest.RunTests(leakcheck.Checked(m), &etcd))
	default:
		fmt.Fprintf(os.Stderr, "%s=%q: use zookeeper or etcd\n", registryEnv, testRegistry)
		os.Exit(2)
	}
}

// onRegistry returns cfg pointed at the tests' registry: its Servers or
// its Etcd endpoints set, the other cleared.
func onRegistry(cfg regcenter.Config) regcenter.Config {
	if etcd != nil {
		cfg.Servers, cfg.Etcd = nil, etcd.Endpoints()
	} else {
		cfg.Servers, cfg.Etcd = zk.Servers(), nil
	}
	return cfg
}

// registryYAML is the regcenter section's key naming the tests' registry,
// as a YAML line: "servers: [...]" or "etcd: [...]".
func registryYAML() string {
	cfg := onRegistry(regcenter.Config{})
	if len(cfg.Etcd) > 0 {
		return "etcd: [" + strings.Join(cfg.Etcd, ", ") + "]"
	}
	return "servers: [" + strings.Join(cfg.Servers, ", ") + "]"
}

// needZooKeeper skips a test that uses what only zktest offers (a proxy
// that cuts one client off, four-letter words) when the tests run on etcd.
func needZooKeeper(t *testing.T, what string) {
	t.Helper()
	if zk == nil {
		t.Skipf("on %s: this test needs ZooKeeper's %s (regcenter/zktest)", testRegistry, what)
	}
}
