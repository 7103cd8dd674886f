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

// A namespace made after the tables were last analyzed is missing from
// ns's statistics, which then say it has one row. Its writes and grouped
// reads still look its nodes up by the primary key: none scans the
// namespace by the parent index's ns prefix. (They did, planned for the
// namespace's name: firebench registered 10,000 jobs in 8 s instead of 3
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

	// A session of its own, which plans as PostgreSQL chooses by default.
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

	// parentIndexReads runs f in a transaction on conn and returns the
	// index entries the parent index returned to it.
	parentIndexReads := func(conn *pgx.Conn, f func(tx pgx.Tx)) int64 {
		t.Helper()
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(context.Background())
		read := func() int64 {
			var n int64
			if err := tx.QueryRow(ctx, "SELECT pg_stat_get_xact_tuples_returned('shardjob_rc_nodes_parent'::regclass)").Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := read()
		f(tx)
		return read() - before
	}

	// The writes, more of them than the plan cache's five tries of a
	// custom plan, on the session that plans by default: the functions
	// say how they plan.
	n := parentIndexReads(conn, func(tx pgx.Tx) {
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
		t.Errorf("8 writes of 3 nodes in the namespace read %d entries of the parent index, want none", n)
	}

	// The grouped reads, on a connection of the center's pool.
	pc, err := c.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Release()
	n = parentIndexReads(pc.Conn(), func(tx pgx.Tx) {
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
		t.Errorf("16 grouped reads of 2 childless nodes in the namespace read %d entries of the parent index, want none", n)
	}
}
