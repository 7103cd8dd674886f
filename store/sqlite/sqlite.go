// Package sqlite links SQLite into the history and the dispatcher: a
// program that imports it may open them with Driver "sqlite" (their
// default). It uses the pure-Go modernc.org/sqlite driver, so the program
// needs no C compiler.
//
//	import (
//		"github.com/shardjob/shardjob/history"
//		_ "github.com/shardjob/shardjob/store/sqlite"
//	)
//
//	rec, err := history.Open(ctx, history.Config{DSN: "/var/lib/shop/history.db"})
//
// See package store for why the databases are linked by import.
package sqlite

import (
	"github.com/shardjob/shardjob/internal/sqldb"

	_ "modernc.org/sqlite" // database/sql driver "sqlite"
)

func init() {
	sqldb.Register(sqldb.Driver{Name: sqldb.NameSQLite, SQLDriver: "sqlite"})
}
