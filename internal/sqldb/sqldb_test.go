package sqldb

import "testing"

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
