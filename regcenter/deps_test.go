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
	for _, pkg := range []string{".", "../job"} {
		depcheck.Forbid(t, pkg, "go.etcd.io/etcd/server/v3", "go.etcd.io/bbolt", "go.etcd.io/raft/v3")
	}
}
