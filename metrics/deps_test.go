package metrics_test

import (
	"testing"

	"github.com/shardjob/shardjob/internal/testing/depcheck"
)

// A program that exports only its scheduler's metrics links no database
// driver: the dispatcher's and the history's collectors live in
// metrics/dispatchmetrics and metrics/historymetrics, and a program links
// a database only by importing store/sqlite or store/postgres
// (store/deps_test.go checks those).
func TestLinksNoDatabaseDriver(t *testing.T) {
	depcheck.Forbid(t, ".", "github.com/jackc/pgx/v5", "github.com/lib/pq", "modernc.org/sqlite", "github.com/mattn/go-sqlite3")
}
