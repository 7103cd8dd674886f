package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestStartQueryClose(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dsn, err := s.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	var db string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	if db != "test_1" {
		t.Errorf("connected to %q, want test_1", db)
	}
	if err := conn.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.exited:
	default:
		t.Error("server still running after Close")
	}
}

// TestStopRestart stops a server, sees connections refused, restarts it
// on the same port and finds the data written before the stop.
func TestStopRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dsn, err := s.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	exec := func(sql string) error {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec("CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	port := s.Port
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := exec("SELECT 1"); err == nil {
		t.Fatal("a stopped server answered")
	}
	if err := s.Stop(); err == nil {
		t.Error("Stop of a stopped server: no error")
	}
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if s.Port != port {
		t.Errorf("port %d after restart, was %d", s.Port, port)
	}
	if err := s.Restart(ctx); err == nil {
		t.Error("Restart of a running server: no error")
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v int
	if err := conn.QueryRow(ctx, "SELECT v FROM kept").Scan(&v); err != nil || v != 42 {
		t.Fatalf("after restart: %d, %v", v, err)
	}
}

// Kill crashes the server (the postmaster and its backends); Restart
// recovers it with every commit acknowledged (StartCrashSafe). Pause freezes it: a query waits
// until Resume.
func TestKillRestartPauseResume(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := StartCrashSafe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	conn, err := pgx.Connect(ctx, s.DSN)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE kept (v int); INSERT INTO kept VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT 1"); err == nil {
		t.Error("a connection to the killed server still answers")
	}
	conn.Close(ctx)
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if conn, err = pgx.Connect(ctx, s.DSN); err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v int
	if err := conn.QueryRow(ctx, "SELECT v FROM kept").Scan(&v); err != nil || v != 7 {
		t.Fatalf("after the crash: %d %v, want 7", v, err)
	}

	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	answered := make(chan error, 1)
	go func() { _, err := conn.Exec(ctx, "SELECT 1"); answered <- err }()
	select {
	case err := <-answered:
		t.Fatalf("a frozen server answered: %v", err)
	case <-time.After(200 * time.Millisecond): // no answer while frozen; Resume must bring one
	}
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := <-answered; err != nil {
		t.Fatalf("after Resume: %v", err)
	}
}
