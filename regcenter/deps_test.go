package regcenter_test

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// A program that reaches ZooKeeper or an etcd cluster links no etcd
// server: the embedded member, which needs one (its storage, raft and their
// dependencies, a hundred and seventy packages), is package
// regcenter/embedded, imported only by the programs that start one.
func TestLinksNoEtcdServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	for _, pkg := range []string{".", "../job"} {
		out, err := exec.CommandContext(ctx, goTool, "list", "-deps", pkg).Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("go list -deps %s: %v\n%s", pkg, err, ee.Stderr)
			}
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, server := range []string{"go.etcd.io/etcd/server", "go.etcd.io/bbolt", "go.etcd.io/raft"} {
				if strings.HasPrefix(dep, server) {
					t.Errorf("package %s links %s", pkg, dep)
				}
			}
		}
	}
}
