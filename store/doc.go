// Package store documents the databases the execution history (package
// history) and the dispatcher (package dispatch) keep their rows in. It
// holds no code: each database is a package of its own, which a program
// imports for its side effect, as it does a database/sql driver:
//
//	import _ "github.com/shardjob/shardjob/store/sqlite"   // Driver "sqlite"
//	import _ "github.com/shardjob/shardjob/store/postgres" // Driver "postgres"
//
// A program links the client of the databases it imports and no other:
// one that keeps its history in SQLite links no PostgreSQL client (pgx),
// one on PostgreSQL no SQLite. history.Open, history.OpenReader and
// dispatch.Open keep taking the database by name (Config.Driver) and a
// DSN, so a configuration file or a command line still picks it; a name
// whose package the program did not import is refused with an error that
// names the import.
//
// Why imports and not a driver value in the Config (as River's
// riverpgxv5 and riversqlite are): the Config stays what it was, plain
// data that a YAML file or flags fill in; one import serves both the
// history and the dispatcher on the same database; and the same shape
// is the one package regcenter already uses for its PostgreSQL backend.
package store
