// Package sqldb holds what the packages that keep their state in SQL
// (dispatch, history) share: the registry of the databases a program links
// (Driver, filled by packages store/sqlite and store/postgres), a SQLite
// connection string built from a file path, and ?-placeholders rewritten
// for PostgreSQL. It imports no database client.
package sqldb

import (
	"strconv"
	"strings"
)

// SQLiteURI returns the connection string of the pure-Go SQLite driver
// for dsn — a file path, ":memory:" or a "file:" URI — with params (for
// example "_pragma=busy_timeout(5000)&_txlock=immediate") added to its
// query. A path becomes a URI with its %, ? and # escaped: left as they
// are, they would be read as an escape, the start of the query and a
// fragment, and another file would be opened.
func SQLiteURI(dsn, params string) string {
	if dsn != ":memory:" && !strings.HasPrefix(dsn, "file:") {
		dsn = "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(dsn)
	}
	if params == "" {
		return dsn
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + params
}

// SQLitePath returns the file a SQLiteURI-style dsn names, and false for
// an in-memory database.
func SQLitePath(dsn string) (string, bool) {
	if strings.Contains(dsn, ":memory:") || strings.Contains(dsn, "mode=memory") {
		return "", false
	}
	path, isURI := strings.CutPrefix(dsn, "file:")
	if !isURI {
		return dsn, true
	}
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	return path, true
}

// Postgres rewrites the ?-placeholders of query as PostgreSQL's $1, $2...
// The queries it is given hold no ? in literals.
func Postgres(query string) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(query[i])
	}
	return b.String()
}
