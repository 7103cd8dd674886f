package postgres_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardjob/shardjob/internal/testing/leakcheck"
	"github.com/shardjob/shardjob/internal/testing/pgtest"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/centertest"
	"github.com/shardjob/shardjob/regcenter/postgres"
)

// pg is the server the package's tests share; tests that stop it start
// one of their own.
var pg *pgtest.Server

// TestMain starts the shared server, runs the tests and checks that they
// leave no goroutine of a center behind.
func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	srv, err := pgtest.Start(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pg = srv
	code := leakcheck.Checked(m).Run()
	if err := srv.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "closing the server:", err)
		code = max(code, 1)
	}
	os.Exit(code)
}

// sessionTimeout is the session timeout of the centers the tests make:
// short, so that a lost session is noticed within seconds, and long
// enough for a loaded machine running -race.
const sessionTimeout = 4 * time.Second

// newDatabase returns the URL of a fresh database on srv.
func newDatabase(tb testing.TB, srv *pgtest.Server) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn, err := srv.NewDatabase(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	return dsn
}

// newCenter opens a center on url with cfg (the URL and a short session
// filled in) and closes it when tb ends.
func newCenter(tb testing.TB, url string, cfg regcenter.Config) *postgres.Center {
	tb.Helper()
	cfg.URL = url
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = sessionTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := postgres.Open(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := c.Close(); err != nil {
			tb.Errorf("close: %v", err)
		}
	})
	return c
}

// expire ends session id on the server as a lapsed lease does, and reaps
// it as another client would: its ephemeral nodes are gone on return.
func expire(tb testing.TB, url, namespace string, id int64) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	tag, err := conn.Exec(ctx, "UPDATE shardjob_rc_sessions SET expires = now() - interval '1 second' WHERE id = $1", id)
	if err != nil {
		tb.Fatal(err)
	}
	if tag.RowsAffected() != 1 {
		tb.Fatalf("no session %d to expire", id)
	}
	if _, err := conn.Exec(ctx, "SELECT shardjob_rc_reap($1, 0, 0)", namespace); err != nil {
		tb.Fatal(err)
	}
}

// factory makes centers on a database of srv for the conformance suite.
// restart, when set, restarts srv.
func factory(tb testing.TB, srv *pgtest.Server, restart bool) centertest.Factory {
	url := newDatabase(tb, srv)
	f := centertest.Factory{
		New: func(tb testing.TB, namespace string) regcenter.Center {
			tb.Helper()
			return newCenter(tb, url, regcenter.Config{Namespace: namespace})
		},
		ExpireSession: func(tb testing.TB, c regcenter.Center) {
			tb.Helper()
			expire(tb, url, c.(*postgres.Center).Namespace(), c.Session().ID())
		},
	}
	if restart {
		f.Restart = func(tb testing.TB) {
			tb.Helper()
			if err := srv.Stop(); err != nil {
				tb.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := srv.Restart(ctx); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return f
}

// ownServer starts a server for one test, closed when it ends.
func ownServer(tb testing.TB) *pgtest.Server {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := pgtest.Start(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := srv.Close(); err != nil {
			tb.Errorf("closing the server: %v", err)
		}
	})
	return srv
}
