// Package postgres links PostgreSQL into the history and the dispatcher:
// a program that imports it may open them with Driver "postgres". It uses
// pgx (github.com/jackc/pgx/v5): its database/sql driver for the stores'
// statements, its pipelined batches for the dispatcher's one-round-trip
// claims, and a connection of its own for the dispatcher's LISTEN.
//
//	import (
//		"github.com/shardjob/shardjob/dispatch"
//		_ "github.com/shardjob/shardjob/store/postgres"
//	)
//
//	d, err := dispatch.Open(ctx, dispatch.Config{Driver: "postgres", DSN: "postgres://shop@db/shop", NodeID: "node-1"})
//
// See package store for why the databases are linked by import.
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/shardjob/shardjob/internal/sqldb"
)

func init() {
	sqldb.Register(sqldb.Driver{Name: sqldb.NamePostgres, SQLDriver: "pgx", Batch: batch, Listen: listen})
}

// batch sends stmts as one pgx batch (one Sync) on one connection of db.
func batch(ctx context.Context, db *sql.DB, stmts []sqldb.Stmt, read func(sqldb.BatchResults) error) (err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("postgres store: connection: %w", err)
	}
	defer func() {
		if cerr := conn.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("postgres store: release connection: %w", cerr))
		}
	}()
	return conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("postgres store: the database/sql connection is a %T, not pgx's", dc)
		}
		b := &pgx.Batch{}
		for _, s := range stmts {
			b.Queue(s.SQL, s.Args...)
		}
		br := c.Conn().SendBatch(ctx, b)
		return errors.Join(read(results{br}), br.Close())
	})
}

type results struct{ br pgx.BatchResults }

func (r results) Exec() error {
	_, err := r.br.Exec()
	return err
}

func (r results) QueryRow(dest ...any) error { return r.br.QueryRow().Scan(dest...) }

func (r results) Query() (sqldb.Rows, error) {
	rows, err := r.br.Query()
	if rows == nil {
		return nil, err
	}
	return rows, err
}

// listen holds a connection of its own that LISTENs on channel.
func listen(ctx context.Context, dsn, channel string, listening, notified func()) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = conn.Close(cctx) // the connection is dropped either way
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return err
	}
	listening()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		notified()
	}
}
