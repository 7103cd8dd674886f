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
	for _, dep := range deps(t, pkg) {
		for _, f := range forbidden {
			if under(dep, f) {
				t.Errorf("package %s links %s", pkg, dep)
			}
		}
	}
}

// Require fails t for every one of required that pkg does not link (it
// or a package under it), so that a Forbid on pkg is known to look at a
// program that links what it should.
func Require(t *testing.T, pkg string, required ...string) {
	t.Helper()
	all := deps(t, pkg)
	for _, r := range required {
		found := false
		for _, dep := range all {
			found = found || under(dep, r)
		}
		if !found {
			t.Errorf("package %s does not link %s", pkg, r)
		}
	}
}

func under(dep, path string) bool { return dep == path || strings.HasPrefix(dep, path+"/") }

// deps lists what pkg links, as `go list -deps` does.
func deps(t *testing.T, pkg string) []string {
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
	return strings.Fields(string(out))
}
