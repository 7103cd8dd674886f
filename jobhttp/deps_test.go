package jobhttp_test

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

// databaseDrivers are the import paths (or parts of them) of the database
// drivers the history and the dispatcher link.
var databaseDrivers = []string{"github.com/jackc/pgx", "github.com/lib/pq", "modernc.org/sqlite", "github.com/mattn/go-sqlite3"}

// A program that serves only its scheduler's operator endpoints and console
// links no database driver: the history's and the dispatcher's adapters,
// which do, live in jobhttp/historyhttp and jobhttp/dispatchhttp.
func TestLinksNoDatabaseDriver(t *testing.T) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); errors.Is(err, fs.ErrNotExist) {
		t.Skipf("no go tool at %s to list the package's dependencies", goTool)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, goTool, "list", "-deps", ".").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list -deps: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, driver := range databaseDrivers {
			if pkg == driver || strings.HasPrefix(pkg, driver+"/") {
				t.Errorf("package jobhttp links %s", pkg)
			}
		}
	}
}
