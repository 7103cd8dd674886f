package regcenter_test

import (
	"testing"

	"github.com/shardjob/shardjob/internal/testing/depcheck"
)

// The clients, by import path: each registry's package links its own.
const (
	zookeeperClient = "github.com/go-zookeeper/zk"
	etcdClient      = "go.etcd.io/etcd/client/v3"
	// etcd's server: its storage, raft and their dependencies, which only
	// an embedded member (package regcenter/embedded) needs.
	etcdServer = "go.etcd.io/etcd/server/v3"
)

var postgresClient = []string{"github.com/jackc/pgx/v5", "github.com/jackc/pgconn", "github.com/lib/pq"}

// This package is the interface and what the registries share: it links
// no registry's client, and neither does the scheduler, which takes a
// Center from its user. Each client is linked by the program that imports
// its package (regcenter/zookeeper, regcenter/etcd, regcenter/postgres).
func TestLinksNoRegistryClient(t *testing.T) {
	for _, pkg := range []string{".", "../job"} {
		depcheck.Forbid(t, pkg, append([]string{zookeeperClient, etcdClient, etcdServer, "go.etcd.io/bbolt", "go.etcd.io/raft/v3"}, postgresClient...)...)
	}
}

// A program on ZooKeeper (testdata/zkonly) links ZooKeeper's client and
// no other registry's; one on an etcd cluster (testdata/etcdonly) links
// etcd's client, and neither ZooKeeper's nor PostgreSQL's, nor an etcd
// server.
func TestOneRegistryLinksOneClient(t *testing.T) {
	depcheck.Require(t, "./testdata/zkonly", zookeeperClient, "github.com/shardjob/shardjob/job")
	depcheck.Forbid(t, "./testdata/zkonly", append([]string{etcdClient, etcdServer}, postgresClient...)...)

	depcheck.Require(t, "./testdata/etcdonly", etcdClient, "github.com/shardjob/shardjob/job")
	depcheck.Forbid(t, "./testdata/etcdonly", append([]string{zookeeperClient, etcdServer, "go.etcd.io/bbolt", "go.etcd.io/raft/v3"}, postgresClient...)...)
}
