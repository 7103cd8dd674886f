package store_test

import (
	"testing"

	"github.com/shardjob/shardjob/internal/testing/depcheck"
)

var (
	postgresClient = []string{"github.com/jackc/pgx/v5", "github.com/jackc/pgconn", "github.com/lib/pq"}
	sqliteClient   = []string{"modernc.org/sqlite", "modernc.org/libc", "github.com/mattn/go-sqlite3"}
)

// A program links the client of the database it imports and no other:
// the programs under testdata keep a history or run a dispatcher on one
// database each.
func TestProgramLinksOnlyItsDatabase(t *testing.T) {
	for _, c := range []struct {
		pkg, links string
		forbid     []string
	}{
		{"./testdata/sqlitehistory", "modernc.org/sqlite", postgresClient},
		{"./testdata/sqlitedispatch", "modernc.org/sqlite", postgresClient},
		{"./testdata/pghistory", "github.com/jackc/pgx/v5", sqliteClient},
		{"./testdata/pgdispatch", "github.com/jackc/pgx/v5", sqliteClient},
	} {
		t.Run(c.pkg, func(t *testing.T) {
			depcheck.Require(t, c.pkg, c.links)
			depcheck.Forbid(t, c.pkg, c.forbid...)
		})
	}
}

// The history, the dispatcher and what serves and measures them link no
// database client at all: only the store packages do.
func TestStoresLinkNoClient(t *testing.T) {
	for _, pkg := range []string{"../history", "../dispatch", "../jobhttp/historyhttp", "../jobhttp/dispatchhttp", "../metrics/historymetrics", "../metrics/dispatchmetrics"} {
		t.Run(pkg, func(t *testing.T) {
			depcheck.Forbid(t, pkg, append(append([]string{}, postgresClient...), sqliteClient...)...)
		})
	}
}
