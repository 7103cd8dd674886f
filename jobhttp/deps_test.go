package jobhttp_test

import (
	"testing"

	"github.com/shardjob/shardjob/internal/testing/depcheck"
)

// databaseDrivers are the import paths of the database drivers the history
// and the dispatcher run on.
var databaseDrivers = []string{"github.com/jackc/pgx/v5", "github.com/lib/pq", "modernc.org/sqlite", "github.com/mattn/go-sqlite3"}

// A program that serves only its scheduler's operator endpoints and console
// links no database driver: the history's and the dispatcher's adapters
// live in jobhttp/historyhttp and jobhttp/dispatchhttp, and a program
// links a database only by importing store/sqlite or store/postgres
// (store/deps_test.go checks those).
func TestLinksNoDatabaseDriver(t *testing.T) {
	depcheck.Forbid(t, ".", databaseDrivers...)
}
