package postgres

import (
	"context"
	"database/sql"
	"os"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/sqldb"
	"github.com/shardjob/shardjob/internal/testing/pgtest"
)

var pg *pgtest.Server

func TestMain(m *testing.M) { os.Exit(pgtest.RunTests(m, &pg)) }

func testDB(t *testing.T) (string, *sql.DB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn, err := pg.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d, err := sqldb.Lookup(sqldb.NamePostgres)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open(d.SQLDriver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return dsn, db
}

// A batch's statements run in one implicit transaction, and their results
// are read in order: an exec, a row, rows.
func TestBatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, db := testDB(t)
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (n INTEGER)`); err != nil {
		t.Fatal(err)
	}
	var one int
	var got []int
	err := batch(ctx, db, []sqldb.Stmt{
		{SQL: `INSERT INTO t (n) VALUES ($1), ($2)`, Args: []any{1, 2}},
		{SQL: `SELECT count(*) FROM t`},
		{SQL: `SELECT n FROM t ORDER BY n`},
	}, func(br sqldb.BatchResults) error {
		if err := br.Exec(); err != nil {
			return err
		}
		if err := br.QueryRow(&one); err != nil {
			return err
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var n int
			if err := rows.Scan(&n); err != nil {
				return err
			}
			got = append(got, n)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if one != 2 || len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Errorf("count %d, rows %v; want 2, [1 2]", one, got)
	}
	// A failing statement fails the batch, and its implicit transaction
	// leaves nothing behind.
	err = batch(ctx, db, []sqldb.Stmt{{SQL: `INSERT INTO t (n) VALUES (3)`}, {SQL: `SELECT 1/0`}}, func(br sqldb.BatchResults) error {
		if err := br.Exec(); err != nil {
			return err
		}
		var x int
		return br.QueryRow(&x)
	})
	if err == nil {
		t.Fatal("no error from a batch that divides by zero")
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil || n != 2 {
		t.Errorf("rows after the failed batch: %d, %v; want 2", n, err)
	}
}

// listen says when it listens, then reports each notification, and ends
// with its context.
func TestListen(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn, db := testDB(t)
	lctx, stop := context.WithCancel(ctx)
	listening, notified := make(chan struct{}), make(chan struct{}, 4)
	done := make(chan error, 1)
	go func() {
		done <- listen(lctx, dsn, "store_test", func() { close(listening) }, func() { notified <- struct{}{} })
	}()
	select {
	case <-listening:
	case err := <-done:
		t.Fatalf("listen ended before listening: %v", err)
	case <-ctx.Done():
		t.Fatal("listen did not start listening")
	}
	if _, err := db.ExecContext(ctx, `SELECT pg_notify('store_test', '')`); err != nil {
		t.Fatal(err)
	}
	select {
	case <-notified:
	case <-ctx.Done():
		t.Fatal("no notification reported")
	}
	stop()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("listen did not end with its context")
	}
}
