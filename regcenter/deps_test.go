package regcenter_test

import (
	"testing"

	"github.com/shardjob/shardjob/internal/testing/depcheck"
)

// A program that reaches ZooKeeper or an etcd cluster links no etcd
// server: the embedded member, which needs one (its storage, raft and their
// dependencies), is package regcenter/embedded, imported only by the
// programs that start one.
func TestLinksNoEtcdServer(t *testing.T) {
	for _, pkg := range []string{".", "../job", "./testdata/zkonly"} {
		depcheck.Forbid(t, pkg, "go.etcd.io/etcd/server/v3", "go.etcd.io/bbolt", "go.etcd.io/raft/v3")
	}
}

// Nor does it link PostgreSQL's client: the registry on PostgreSQL is
// package regcenter/postgres, which a program imports to open a
// postgres:// URL; regcenter reaches it through RegisterOpener. The
// scheduler and a program on ZooKeeper (testdata/zkonly) are checked too.
// (The examples take -pg, so they link it.)
func TestLinksNoPostgresClient(t *testing.T) {
	for _, pkg := range []string{".", "../job", "./testdata/zkonly"} {
		depcheck.Forbid(t, pkg, "github.com/jackc/pgx/v5", "github.com/jackc/pgconn", "github.com/lib/pq")
	}
	depcheck.Require(t, "./testdata/zkonly", "github.com/go-zookeeper/zk", "github.com/shardjob/shardjob/job")
}
