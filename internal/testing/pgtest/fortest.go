package pgtest

import (
	"context"
	"testing"
	"time"
)

// StartT starts a server for t, failing t if it cannot, and closes it
// when t ends (a failed close fails t).
func StartT(t testing.TB) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("pgtest: closing the server: %v", err)
		}
	})
	return srv
}

// NewDatabaseT starts a server for t, as StartT does, and returns the DSN
// of a fresh database on it.
func NewDatabaseT(t testing.TB) string {
	t.Helper()
	srv := StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn, err := srv.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}
