package postgres_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/postgres"
)

// A namespace made after the nodes were last analyzed, which the
// statistics would say has one row: its writes and grouped reads look its
// nodes up by the primary key, and none scans the namespace or the table.
// (They scanned the namespace by the ns prefix of the parent index before
// schema version 4: firebench registered 10,000 jobs in 8 s instead of 3
// after -requests had filled other namespaces and autovacuum had analyzed
// the tables.)
func TestANamespaceTheStatisticsHaveNotSeenIsNotScanned(t *testing.T) {
	url := newDatabase(t, pg)
	ctx := ctxFor(t)
	old := newCenter(t, url, regcenter.Config{Namespace: "old"})
	create := func(c *postgres.Center, prefix string, n int) {
		t.Helper()
		var ops []regcenter.Op
		for i := range n {
			ops = append(ops, regcenter.CreateOp{Path: fmt.Sprintf("%s/%04d", prefix, i)})
			if len(ops) == 500 || i == n-1 {
				if err := c.Multi(ctx, ops...); err != nil {
					t.Fatal(err)
				}
				ops = nil
			}
		}
	}
	if err := old.EnsurePath(ctx, "/o"); err != nil {
		t.Fatal(err)
	}
	create(old, "/o", 300)

	// A session of its own.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// Analyzed now, and not again while the test runs.
	if _, err := conn.Exec(ctx, "ALTER TABLE shardjob_rc_nodes SET (autovacuum_enabled = off)"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "ANALYZE shardjob_rc_nodes"); err != nil {
		t.Fatal(err)
	}

	c := newCenter(t, url, regcenter.Config{Namespace: "new"})
	if err := c.EnsurePath(ctx, "/n"); err != nil {
		t.Fatal(err)
	}
	create(c, "/n", 2000)

	// scanned runs f in a transaction on conn and returns the index
	// entries the parent index returned to it and the rows sequential
	// scans of the nodes did.
	scanned := func(conn *pgx.Conn, f func(tx pgx.Tx)) int64 {
		t.Helper()
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(context.Background())
		read := func() int64 {
			var n int64
			if err := tx.QueryRow(ctx, `SELECT pg_stat_get_xact_tuples_returned('shardjob_rc_nodes_parent'::regclass) +
				pg_stat_get_xact_tuples_returned('shardjob_rc_nodes'::regclass)`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := read()
		f(tx)
		return read() - before
	}

	// The writes, more of them than the plan cache's five tries of a
	// custom plan.
	n := scanned(conn, func(tx pgx.Tx) {
		for i := range 8 {
			kinds := []int16{1, 1, 2}
			paths := []string{fmt.Sprintf("/w/%d/a", i), fmt.Sprintf("/w/%d/b", i), fmt.Sprintf("/n/%04d", i)}
			data := [][]byte{{}, {}, []byte("x")}
			vers := []int32{0, 0, -1}
			modes := []int16{0, 0, 0}
			var rev int64
			if err := tx.QueryRow(ctx, `SELECT o_rev FROM shardjob_rc_write_seen($1, $2, 0, 0, true, $3, $4, $5, $6, $7)`,
				"new", int64(math.MaxInt64), kinds, paths, data, vers, modes).Scan(&rev); err != nil {
				t.Fatal(err)
			}
		}
	})
	if n > 0 {
		t.Errorf("8 writes of 3 nodes in the namespace scanned %d rows or entries of the parent index, want none", n)
	}

	// The grouped reads, on a connection of the center's pool.
	pc, err := c.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Release()
	n = scanned(pc.Conn(), func(tx pgx.Tx) {
		for i := range 8 {
			for _, q := range []string{postgres.ReadNodesQuery, postgres.ReadChildrenQuery} {
				rows, err := tx.Query(ctx, q, "new", []string{fmt.Sprintf("/n/%04d", i), fmt.Sprintf("/n/%04d", i+1)})
				if err != nil {
					t.Fatal(err)
				}
				for rows.Next() {
				}
				if rows.Close(); rows.Err() != nil {
					t.Fatal(rows.Err())
				}
			}
		}
	})
	if n > 0 {
		t.Errorf("16 grouped reads of 2 childless nodes in the namespace scanned %d rows or entries of the parent index, want none", n)
	}
}

// The migration to version 4 rebuilds the nodes' indexes with the path
// and the parent first.
func TestMigrationPutsThePathFirst(t *testing.T) {
	url := newDatabase(t, pg)
	ctx := ctxFor(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, m := range postgres.MigrationsForTest[:3] {
		if _, err := conn.Exec(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, "UPDATE shardjob_rc_meta SET version = 3"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO shardjob_rc_nodes (ns, path, parent, name, czxid, mzxid, ctime, mtime)
		SELECT 'a', '/' || g, '/', g::text, 1, 1, now(), now() FROM generate_series(1, 100) g`); err != nil {
		t.Fatal(err)
	}
	c := newCenter(t, url, regcenter.Config{Namespace: "a"})
	for name, want := range map[string]string{
		"shardjob_rc_nodes_pkey":   "CREATE UNIQUE INDEX shardjob_rc_nodes_pkey ON public.shardjob_rc_nodes USING btree (path, ns)",
		"shardjob_rc_nodes_parent": "CREATE INDEX shardjob_rc_nodes_parent ON public.shardjob_rc_nodes USING btree (parent, ns)",
	} {
		var def string
		if err := conn.QueryRow(ctx, "SELECT indexdef FROM pg_indexes WHERE indexname = $1", name).Scan(&def); err != nil {
			t.Fatal(name, err)
		}
		if def != want {
			t.Errorf("%s: %s, want %s", name, def, want)
		}
	}
	kids, err := c.Children(ctx, "/")
	if err != nil || len(kids) != 100 {
		t.Fatalf("children of / after the migration: %d (%v), want 100", len(kids), err)
	}
	if _, err := c.Create(ctx, "/1", nil, regcenter.Persistent); err == nil {
		t.Fatal("a node made again over one the migration kept: no error")
	}
}
