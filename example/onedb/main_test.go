package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardjob/shardjob/internal/testing/pgtest"
)

// checkOutput checks what a run printed: both instances ran items, the
// history read back has the newest run of every item, and every task
// finished.
func checkOutput(t *testing.T, out string) {
	t.Helper()
	for _, id := range []string{"node-1", "node-2"} {
		if !regexp.MustCompile(id + ` ran \[\d`).MatchString(out) {
			t.Errorf("%s ran no item:\n%s", id, out)
		}
	}
	for item := range items {
		if !regexp.MustCompile(`(?m)^  item ` + strconv.Itoa(item) + `: fire \d\d:\d\d:\d\d on node-\d, \S+, success$`).MatchString(out) {
			t.Errorf("the history read back has no run of item %d:\n%s", item, out)
		}
	}
	if !strings.Contains(out, "dispatcher: 30 of 30 tasks finished") {
		t.Errorf("not every task finished:\n%s", out)
	}
}

// go run ./example/onedb: a throwaway server, everything on it, a clean
// shutdown.
func TestRunsOnAThrowawayServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out, "", 2*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	checkOutput(t, out.String())
}

// -pg URL: the registry, the history and the dispatcher are in that one
// database.
func TestRunsOnTheGivenDatabase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, err := pgtest.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dsn, err := srv.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(ctx, &out, dsn, 2*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	checkOutput(t, out.String())
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, table := range []string{"shardjob_rc_nodes", "shardjob_history_executions", "dispatch_tasks"} {
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil || n == 0 {
			t.Errorf("%s in the given database: %d rows, %v", table, n, err)
		}
	}
}

// A URL with a password is refused before anything starts, naming where
// the password goes instead.
func TestRefusesAPasswordInTheURL(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), &out, "postgres://shardjob:hunter2@db.example/jobs", time.Second)
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "PGPASSWORD") {
		t.Fatalf("a URL with a password: %v, want it refused without the password, naming PGPASSWORD", err)
	}
}
