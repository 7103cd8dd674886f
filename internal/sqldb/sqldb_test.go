package sqldb

import (
	"strings"
	"testing"
)

func TestSQLiteURI(t *testing.T) {
	for _, c := range []struct{ dsn, params, want string }{
		{"dispatch.db", "_txlock=immediate", "file:dispatch.db?_txlock=immediate"},
		{"/var/lib/odd #1?%41.db", "a=1", "file:/var/lib/odd %231%3f%2541.db?a=1"},
		{"file:x.db?mode=ro", "a=1", "file:x.db?mode=ro&a=1"},
		{":memory:", "a=1", ":memory:?a=1"},
		{"x.db", "", "file:x.db"},
	} {
		if got := SQLiteURI(c.dsn, c.params); got != c.want {
			t.Errorf("SQLiteURI(%q, %q) = %q, want %q", c.dsn, c.params, got, c.want)
		}
	}
}

func TestSQLitePath(t *testing.T) {
	for _, c := range []struct {
		dsn, want string
		file      bool
	}{
		{"a/b.db", "a/b.db", true},
		{"file:a/b.db?mode=ro", "a/b.db", true},
		{":memory:", "", false},
		{"file:x?mode=memory&cache=shared", "", false},
	} {
		if got, file := SQLitePath(c.dsn); got != c.want || file != c.file {
			t.Errorf("SQLitePath(%q) = %q, %v; want %q, %v", c.dsn, got, file, c.want, c.file)
		}
	}
}

func TestPostgres(t *testing.T) {
	if got := Postgres("SELECT a FROM t WHERE b = ? AND c IN (?, ?)"); got != "SELECT a FROM t WHERE b = $1 AND c IN ($2, $3)" {
		t.Errorf("got %q", got)
	}
	if got := Postgres("SELECT 1"); got != "SELECT 1" {
		t.Errorf("got %q", got)
	}
}

// Lookup finds a registered database, and for one no package registered
// names the package to import; a second Register of a name panics.
func TestRegistry(t *testing.T) {
	Register(Driver{Name: "test-db", SQLDriver: "test-sql"})
	if d, err := Lookup("test-db"); err != nil || d.SQLDriver != "test-sql" {
		t.Errorf("Lookup(test-db) = %+v, %v", d, err)
	}
	_, err := Lookup("other")
	if err == nil || !strings.Contains(err.Error(), `import _ "github.com/shardjob/shardjob/store/other"`) || !strings.Contains(err.Error(), "test-db") {
		t.Errorf("Lookup(other) error = %v, want the import to add and what is linked", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("a second Register of test-db did not panic")
		}
	}()
	Register(Driver{Name: "test-db"})
}
