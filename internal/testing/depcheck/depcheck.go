// Package depcheck is a test helper: it fails a test when a package links
// a dependency it must not (a database driver, etcd's server), as `go list
// -deps` reports them.
package depcheck

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Forbid fails t for every package that pkg (a path as `go list` takes
// it, relative to the test's directory) links whose import path is one of
// forbidden or lies under one. It skips t when the go tool is missing.
func Forbid(t *testing.T, pkg string, forbidden ...string) {
	t.Helper()
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); errors.Is(err, fs.ErrNotExist) {
		t.Skipf("no go tool at %s to list the package's dependencies", goTool)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, goTool, "list", "-deps", pkg).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("package %s links %s", pkg, dep)
			}
		}
	}
}
