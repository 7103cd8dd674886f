package centertest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardjob/shardjob/internal/testing/pgtest"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/postgres"
)

// TestSuiteFailsBrokenCentersOnPostgres runs the breakages of
// TestSuiteFailsBrokenCenters over centers on PostgreSQL: every case that
// catches one on ZooKeeper catches it there too, and passes the unbroken
// center.
func TestSuiteFailsBrokenCentersOnPostgres(t *testing.T) {
	url := pgtest.NewDatabaseT(t)
	checkBrokenFail(t, Factory{
		New: func(tb testing.TB, namespace string) regcenter.Center {
			tb.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := postgres.Open(ctx, regcenter.Config{URL: url, Namespace: namespace, SessionTimeout: 4 * time.Second})
			if err != nil {
				tb.Fatal(err)
			}
			tb.Cleanup(func() {
				if err := c.Close(); err != nil {
					tb.Errorf("close: %v", err)
				}
			})
			return c
		},
		ExpireSession: func(tb testing.TB, c regcenter.Center) {
			tb.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				tb.Fatal(err)
			}
			defer conn.Close(ctx)
			// A lease run out, reaped as another client would reap it.
			if _, err := conn.Exec(ctx, "UPDATE shardjob_rc_sessions SET expires = now() - interval '1 second' WHERE id = $1", c.Session().ID()); err != nil {
				tb.Fatal(err)
			}
			if _, err := conn.Exec(ctx, "SELECT shardjob_rc_reap($1, 0, 0)", c.(*postgres.Center).Namespace()); err != nil {
				tb.Fatal(err)
			}
		},
	})
}
