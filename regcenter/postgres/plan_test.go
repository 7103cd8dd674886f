package postgres_test

import (
	"context"
	"fmt"
	"math"
	"strings"
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

// A session's writes made while the nodes were few, on a table never
// analyzed, and its writes once the table has grown: none scans the
// table. A session's sixth run of a function's statement may keep a plan
// made for any values (a generic plan), planned for the table's size at
// that time; nothing plans it again until the table is analyzed. Before
// schema version 5, write_seen's check of the nodes a write names was a
// join that such a plan made a scan of the whole table under the
// namespace's row lock: firebench -register on a fresh database took 10 s
// to stop 10,000 jobs, most of them past the leave's deadline.
func TestAFreshTableIsNotScannedByAPlanMadeWhenItWasSmall(t *testing.T) {
	url := newDatabase(t, pg)
	ctx := ctxFor(t)
	c := newCenter(t, url, regcenter.Config{Namespace: "fresh"})
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "ALTER TABLE shardjob_rc_nodes SET (autovacuum_enabled = off)"); err != nil {
		t.Fatal(err)
	}
	write := func(kinds []int16, paths []string) {
		t.Helper()
		n := len(kinds)
		data := make([][]byte, n)
		for i := range data {
			data[i] = []byte{}
		}
		vers := make([]int32, n)
		for i := range vers {
			vers[i] = -1
		}
		var rev int64
		if err := conn.QueryRow(ctx, `SELECT o_rev FROM shardjob_rc_write_seen($1, $2, 0, 0, true, $3, $4, $5, $6, $7)`,
			"fresh", int64(math.MaxInt64), kinds, paths, data, vers, make([]int16, n)).Scan(&rev); err != nil {
			t.Fatal(err)
		}
	}
	// The session's first writes, as a registration's, while the table is
	// small: jobs' nodes made, then a status deleted and a flag set.
	for i := range 8 {
		var kinds []int16
		var paths []string
		for j := range 10 {
			for _, p := range []string{"", "/status", "/flag"} {
				kinds = append(kinds, 1)
				paths = append(paths, fmt.Sprintf("/j%d-%d%s", i, j, p))
			}
		}
		write(kinds, paths)
		write([]int16{3, 2}, []string{fmt.Sprintf("/j%d-0/status", i), fmt.Sprintf("/j%d-0/flag", i)})
	}
	// The table grows, written by others.
	var ops []regcenter.Op
	for i := range 20000 {
		ops = append(ops, regcenter.CreateOp{Path: fmt.Sprintf("/g/%05d", i)})
		if len(ops) == 1000 {
			if err := c.Multi(ctx, append([]regcenter.Op{regcenter.SetOp{Path: "/j0-1", Version: -1}}, ops...)...); err != nil {
				t.Fatal(err)
			}
			ops = nil
		}
		if i == 0 {
			if err := c.EnsurePath(ctx, "/g"); err != nil {
				t.Fatal(err)
			}
		}
	}
	var analyzed bool
	if err := conn.QueryRow(ctx, `SELECT reltuples >= 0 FROM pg_class WHERE oid = 'shardjob_rc_nodes'::regclass`).Scan(&analyzed); err != nil {
		t.Fatal(err)
	}
	if analyzed {
		t.Fatal("the nodes were analyzed or vacuumed: the test needs a table never analyzed")
	}
	// The leaves, on the session that planned when the table was small.
	read := func() (seq, idx int64) {
		t.Helper()
		if err := conn.QueryRow(ctx, `SELECT pg_stat_get_xact_tuples_returned('shardjob_rc_nodes'::regclass),
			pg_stat_get_xact_tuples_returned('shardjob_rc_nodes_pkey'::regclass) +
			pg_stat_get_xact_tuples_returned('shardjob_rc_nodes_parent'::regclass)`).Scan(&seq, &idx); err != nil {
			t.Fatal(err)
		}
		return seq, idx
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	seq0, idx0 := read()
	for i := 1; i < 8; i++ {
		write([]int16{3, 2}, []string{fmt.Sprintf("/j%d-%d/status", i, 1), fmt.Sprintf("/j%d-%d/flag", i, 1)})
	}
	seq1, idx1 := read()
	if seq1 > seq0 {
		t.Errorf("7 writes of 2 nodes on a table of 20,000 never analyzed scanned %d rows, want none", seq1-seq0)
	}
	// Each write looks up its 2 nodes for the check, again to write them,
	// the parent of the deleted one and the last node's stat: a few entries
	// of the primary key a write.
	if n := idx1 - idx0; n > 7*12 {
		t.Errorf("7 writes of 2 nodes read %d index entries, want at most %d", n, 7*12)
	}
}

// The migration to version 5, from 3 and from 4: write_seen still refuses
// the first set, delete or check, in the write's order, of a node made
// after the revision the client had seen, and applies a write that names
// none.
func TestMigrationChecksTheNodesOneByOne(t *testing.T) {
	for _, from := range []int{3, 4} {
		t.Run(fmt.Sprint("from ", from), func(t *testing.T) {
			url := newDatabase(t, pg)
			ctx := ctxFor(t)
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			for _, m := range postgres.MigrationsForTest[:from] {
				if _, err := conn.Exec(ctx, m); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := conn.Exec(ctx, "UPDATE shardjob_rc_meta SET version = $1", from); err != nil {
				t.Fatal(err)
			}
			c := newCenter(t, url, regcenter.Config{Namespace: "m"})
			var version int
			if err := conn.QueryRow(ctx, "SELECT version FROM shardjob_rc_meta").Scan(&version); err != nil {
				t.Fatal(err)
			}
			if version != postgres.SchemaVersion {
				t.Fatalf("schema version %d after the migration, want %d", version, postgres.SchemaVersion)
			}
			for _, p := range []string{"/a", "/b", "/c"} {
				if _, err := c.Create(ctx, p, nil, regcenter.Persistent); err != nil {
					t.Fatal(err)
				}
			}
			var bRev int64
			if err := conn.QueryRow(ctx, "SELECT czxid FROM shardjob_rc_nodes WHERE ns = 'm' AND path = '/b'").Scan(&bRev); err != nil {
				t.Fatal(err)
			}
			write := func(seen int64, kinds []int16, paths []string) error {
				n := len(kinds)
				data := make([][]byte, n)
				for i := range data {
					data[i] = []byte{}
				}
				vers := make([]int32, n)
				for i := range vers {
					vers[i] = -1
				}
				var rev int64
				return conn.QueryRow(ctx, `SELECT o_rev FROM shardjob_rc_write_seen($1, $2, 0, 0, false, $3, $4, $5, $6, $7)`,
					"m", seen, kinds, paths, data, vers, make([]int16, n)).Scan(&rev)
			}
			// /b and /c made after bRev-1; the create of /b/x and the
			// check of /a do not count: the set of /b (op 2) is refused.
			err = write(bRev-1, []int16{1, 4, 2, 3}, []string{"/b/x", "/a", "/b", "/c"})
			var rev int64
			if err := conn.QueryRow(ctx, "SELECT rev FROM shardjob_rc_ns WHERE ns = 'm'").Scan(&rev); err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("shardjob:unseen:2:%d", rev); err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("a write naming nodes made after its revision: %v, want %s", err, want)
			}
			if err := write(rev, []int16{1, 4, 2, 3}, []string{"/b/x", "/a", "/b", "/c"}); err != nil {
				t.Fatalf("the write sent again as seen now: %v", err)
			}
			if ok, _, err := c.Exists(ctx, "/c"); err != nil || ok {
				t.Fatalf("/c after the write that deleted it: exists %v (%v)", ok, err)
			}
		})
	}
}
