package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// The databases, by the names Config.Driver gives them in history and
// dispatch.
const (
	NameSQLite   = "sqlite"
	NamePostgres = "postgres"
)

// Driver is a database the SQL stores (history, dispatch) run on, as
// package store/sqlite or store/postgres registers it when a program
// imports it. The stores hold the SQL; a Driver brings the client library
// and what database/sql does not carry.
type Driver struct {
	// Name is NameSQLite or NamePostgres.
	Name string
	// SQLDriver is the database/sql driver's name, for sql.Open.
	SQLDriver string
	// Batch sends stmts on one connection of db in one round trip and
	// hands read their results, in order (PostgreSQL only).
	Batch func(ctx context.Context, db *sql.DB, stmts []Stmt, read func(BatchResults) error) error
	// Listen connects to dsn, LISTENs on channel, calls listening once it
	// does, then notified on every notification, until ctx ends or the
	// connection fails (PostgreSQL only).
	Listen func(ctx context.Context, dsn, channel string, listening, notified func()) error
}

// Stmt is one statement of a Batch.
type Stmt struct {
	SQL  string
	Args []any
}

// BatchResults reads a Batch's results, one call a statement, in order.
type BatchResults interface {
	Exec() error
	QueryRow(dest ...any) error
	Query() (Rows, error)
}

// Rows are the rows of one statement of a Batch.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

var (
	driversMu sync.RWMutex
	drivers   = map[string]Driver{}
)

// Register makes d available to the stores under d.Name. It panics when
// called twice for a name: two packages would claim one database.
func Register(d Driver) {
	driversMu.Lock()
	defer driversMu.Unlock()
	if _, dup := drivers[d.Name]; dup {
		panic("sqldb: Register called twice for " + d.Name)
	}
	drivers[d.Name] = d
}

// Lookup returns the Driver registered as name, or an error that names
// the package a program imports to register it.
func Lookup(name string) (Driver, error) {
	driversMu.RLock()
	defer driversMu.RUnlock()
	if d, ok := drivers[name]; ok {
		return d, nil
	}
	var linked []string
	for n := range drivers {
		linked = append(linked, n)
	}
	sort.Strings(linked)
	have := "none is"
	if len(linked) > 0 {
		have = strings.Join(linked, ", ") + " is"
	}
	return Driver{}, fmt.Errorf("the %s store is not linked into this program (%s): import _ \"github.com/shardjob/shardjob/store/%s\"", name, have, name)
}
