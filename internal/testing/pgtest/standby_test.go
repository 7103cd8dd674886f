package pgtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// execOn runs sql on dsn in a connection of its own.
func execOn(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// A synchronous standby has every commit the primary acknowledged: the
// primary killed, the standby promoted, the row is there and the promoted
// server takes writes. Before its promotion the standby refuses writes.
func TestSynchronousStandbyPromoted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := StartCrashSafe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	sb, err := p.StartStandby(ctx, Synchronous)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if sb.Port == p.Port || sb.Dir == p.Dir {
		t.Fatalf("standby on port %d in %s, primary on %d in %s", sb.Port, sb.Dir, p.Port, p.Dir)
	}
	if err := execOn(ctx, p.DSN, "CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	if err := execOn(ctx, sb.DSN, "CREATE TABLE refused (v int)"); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("a write on the standby: %v, want it refused as read-only", err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := sb.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, sb.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v int
	if err := conn.QueryRow(ctx, "SELECT v FROM kept").Scan(&v); err != nil || v != 42 {
		t.Fatalf("after the promotion: %d %v, want the primary's 42", v, err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO kept VALUES (43)"); err != nil {
		t.Fatalf("a write on the promoted server: %v", err)
	}
}

// An asynchronous standby of a fast (synchronous_commit off) primary
// follows it; a synchronous one is refused there, since such a primary
// waits for nothing.
func TestAsynchronousStandby(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.StartStandby(ctx, Synchronous); err == nil || !strings.Contains(err.Error(), "StartCrashSafe") {
		t.Errorf("a synchronous standby of a Start server: %v, want it refused naming StartCrashSafe", err)
	}
	sb, err := p.StartStandby(ctx, Asynchronous)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if err := execOn(ctx, p.DSN, "CREATE TABLE kept (v int); INSERT INTO kept VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, sb.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for { // replayed shortly after the commit
		var v int
		err := conn.QueryRow(ctx, "SELECT v FROM kept").Scan(&v)
		if err == nil && v == 7 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the standby did not replay the primary's commit: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
