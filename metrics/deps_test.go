package metrics_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// A program that exports only its scheduler's metrics links no database
// driver: the dispatcher's and the history's collectors, which do, live in
// metrics/dispatchmetrics and metrics/historymetrics.
func TestLinksNoDatabaseDriver(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.CommandContext(ctx, goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, driver := range []string{"github.com/jackc/pgx", "github.com/lib/pq", "sqlite"} {
			if strings.Contains(pkg, driver) {
				t.Errorf("package metrics links %s", pkg)
			}
		}
	}
}
