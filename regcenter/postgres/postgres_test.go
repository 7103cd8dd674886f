package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/postgres"
)

// A watcher that falls behind the change log's retention gets EventResync,
// not a silent gap, and then every change after it.
func TestWatchBehindRetentionResyncs(t *testing.T) {
	url := newDatabase(t, pg)
	a := newCenter(t, url, regcenter.Config{Namespace: "retention"})
	b := newCenter(t, url, regcenter.Config{Namespace: "retention"})
	ctx := ctxFor(t)
	if _, err := b.Create(ctx, "/n", []byte("0"), regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	got := make(chan regcenter.Event, 100)
	_, cancel, err := a.WatchNow(ctx, "/n", regcenter.WatchNode, func(e regcenter.Event) { got <- e })
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	resume := a.PauseWatches()
	resumed := false
	defer func() {
		if !resumed {
			resume()
		}
	}()
	for i := range 20 {
		if _, err := b.Set(ctx, "/n", []byte(fmt.Sprint(i)), -1); err != nil {
			t.Fatal(err)
		}
	}
	b.SetLogRetention(5)
	if !b.HeartbeatNow() { // prunes
		t.Fatal("heartbeat not answered")
	}
	resume()
	resumed = true
	next := func() regcenter.Event {
		t.Helper()
		select {
		case e := <-got:
			return e
		case <-time.After(20 * time.Second):
			t.Fatal("no event within 20s")
		}
		return regcenter.Event{}
	}
	var seen []regcenter.EventType
	for {
		e := next()
		seen = append(seen, e.Type)
		if e.Type == regcenter.EventResync {
			break
		}
		if len(seen) > 20 {
			t.Fatalf("events %v, want an EventResync", seen)
		}
	}
	if _, err := b.Set(ctx, "/n", []byte("after"), -1); err != nil {
		t.Fatal(err)
	}
	if e := next(); e.Type != regcenter.EventDataChanged {
		t.Fatalf("after the resync: %v, want data-changed", e.Type)
	}
}

// Centers opening a fresh database at once create its schema once.
func TestConcurrentOpensMigrateOnce(t *testing.T) {
	url := newDatabase(t, pg)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := postgres.Open(ctx, regcenter.Config{URL: url, Namespace: fmt.Sprintf("ns%d", i%2), SessionTimeout: sessionTimeout})
			if err != nil {
				errs <- err
				return
			}
			errs <- c.Close()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// A database whose schema is newer than the code is refused, saying so.
func TestNewerSchemaRefused(t *testing.T) {
	url := newDatabase(t, pg)
	c := newCenter(t, url, regcenter.Config{Namespace: "newer"})
	ctx := ctxFor(t)
	if _, err := c.Pool().Exec(ctx, "UPDATE shardjob_rc_meta SET version = $1", postgres.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	_, err := postgres.Open(ctx, regcenter.Config{URL: url, Namespace: "newer"})
	if !errors.Is(err, regcenter.ErrInvalidConfig) || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Open on a newer schema: %v, want ErrInvalidConfig saying it is newer", err)
	}
}

// sslmode=verify-full is honoured: against a server without TLS the
// connection fails, with no fall back to plain text.
func TestVerifyFullRefusesPlainServer(t *testing.T) {
	url := strings.Replace(newDatabase(t, pg), "sslmode=disable", "sslmode=verify-full", 1)
	ctx := ctxFor(t)
	_, err := postgres.Open(ctx, regcenter.Config{URL: url, Namespace: "tls", ConnectTimeout: 5 * time.Second})
	if !errors.Is(err, regcenter.ErrTLS) {
		t.Fatalf("Open with sslmode=verify-full on a server without TLS: %v, want ErrTLS", err)
	}
}

var roleRuns atomic.Int64

// The user and password come from DigestFile; an ordinary role that owns
// its database (no superuser) creates the schema and works.
func TestDigestFileAndNoSuperuser(t *testing.T) {
	ctx := ctxFor(t)
	admin, err := pgx.Connect(ctx, pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	runs := roleRuns.Add(1) // -count runs again on the same server
	role, db := fmt.Sprintf("rc_user%d", runs), fmt.Sprintf("rc_owned%d", runs)
	for _, q := range []string{
		"CREATE ROLE " + role + " LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD 'rc-pass'",
		"CREATE DATABASE " + db + " OWNER " + role,
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(t.TempDir(), "digest")
	if err := os.WriteFile(file, []byte(role+":rc-pass\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url := strings.Replace(strings.Replace(pg.DSN, "/postgres?", "/"+db+"?", 1), "postgres@", "", 1)
	rc, err := regcenter.Open(ctx, regcenter.Config{URL: url, DigestFile: file, Namespace: "owned", SessionTimeout: sessionTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	c := rc.(*postgres.Center)
	var user string
	var super bool
	if err := c.Pool().QueryRow(ctx, "SELECT current_user, usesuper FROM pg_user WHERE usename = current_user").Scan(&user, &super); err != nil {
		t.Fatal(err)
	}
	if user != role || super {
		t.Fatalf("connected as %s (superuser %v), want %s, not a superuser", user, super, role)
	}
	if _, err := c.Create(ctx, "/a/b", []byte("x"), regcenter.EphemeralSequential); err != nil {
		t.Fatal(err)
	}
}

// A user without CREATE on the schema cannot make the registry's tables:
// Open says so with ErrUnauthorized. A database that does not exist is a
// configuration error.
func TestOpenRefusals(t *testing.T) {
	ctx := ctxFor(t)
	admin, err := pgx.Connect(ctx, pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	runs := roleRuns.Add(1)
	role := fmt.Sprintf("rc_nocreate%d", runs)
	if _, err := admin.Exec(ctx, "CREATE ROLE "+role+" LOGIN NOSUPERUSER"); err != nil {
		t.Fatal(err)
	}
	url := newDatabase(t, pg) // owned by postgres: the role may not create in its public schema
	url = strings.Replace(url, "postgres@", role+"@", 1)
	_, err = postgres.Open(ctx, regcenter.Config{URL: url, Namespace: "refused"})
	if !errors.Is(err, regcenter.ErrUnauthorized) || !strings.Contains(err.Error(), "CREATE") {
		t.Errorf("Open as a user without CREATE: %v, want ErrUnauthorized naming CREATE", err)
	}
	missing := strings.Replace(pg.DSN, "/postgres?", "/no_such_db?", 1)
	if _, err := postgres.Open(ctx, regcenter.Config{URL: missing, Namespace: "refused"}); !errors.Is(err, regcenter.ErrInvalidConfig) {
		t.Errorf("Open of a missing database: %v, want ErrInvalidConfig", err)
	}
}

// A database that went back (restored from a backup, or failed over to a
// standby that lacked the latest commits) reuses revisions a watcher has
// already passed: the watcher resynchronises instead of skipping the
// changes that now carry them.
func TestWatchResyncsWhenTheDatabaseGoesBack(t *testing.T) {
	url := newDatabase(t, pg)
	a := newCenter(t, url, regcenter.Config{Namespace: "back"})
	ctx := ctxFor(t)
	if _, err := a.Create(ctx, "/n", nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	got := make(chan regcenter.Event, 100)
	_, cancel, err := a.WatchNow(ctx, "/n", regcenter.WatchNode, func(e regcenter.Event) { got <- e })
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	for i := range 5 {
		if _, err := a.Set(ctx, "/n", []byte(fmt.Sprint(i)), -1); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		select {
		case <-got:
		case <-time.After(20 * time.Second):
			t.Fatal("the watcher did not hear of the sets")
		}
	}
	// The last three revisions are lost, as a failover would lose them.
	if _, err := a.Pool().Exec(ctx, `WITH b AS (UPDATE shardjob_rc_ns SET rev = rev - 3 WHERE ns = 'back' RETURNING rev)
		DELETE FROM shardjob_rc_log WHERE ns = 'back' AND rev > (SELECT rev FROM b)`); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Set(ctx, "/n", []byte("after"), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-got:
		if e.Type != regcenter.EventResync {
			t.Fatalf("first event after the database went back: %v, want resync", e.Type)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no event after the database went back: the change was skipped")
	}
}

// A watch made at the newest revision, before the database went back,
// hears the changes after the resync, also those that reuse revisions
// at or below the one it was made at: whether the watch reader had read
// the lost revisions or not (it was held).
func TestWatchHearsChangesThatReuseItsRevisions(t *testing.T) {
	for _, held := range []bool{false, true} {
		t.Run(fmt.Sprintf("reader held %v", held), func(t *testing.T) {
			url := newDatabase(t, pg)
			a := newCenter(t, url, regcenter.Config{Namespace: "reuse"})
			ctx := ctxFor(t)
			if _, err := a.Create(ctx, "/n", nil, regcenter.Persistent); err != nil {
				t.Fatal(err)
			}
			before := make(chan regcenter.Event, 100) // proves the reader read the sets
			_, cancelBefore, err := a.WatchNow(ctx, "/n", regcenter.WatchNode, func(e regcenter.Event) { before <- e })
			if err != nil {
				t.Fatal(err)
			}
			defer cancelBefore()
			resume := func() {}
			if held {
				resume = sync.OnceFunc(a.PauseWatches())
				defer resume()
			}
			for i := range 5 {
				if _, err := a.Set(ctx, "/n", []byte(fmt.Sprint(i)), -1); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < 5 && !held; i++ {
				select {
				case <-before:
				case <-time.After(20 * time.Second):
					t.Fatal("the reader did not read the sets")
				}
			}
			got := make(chan regcenter.Event, 100)
			_, cancel, err := a.WatchNow(ctx, "/n", regcenter.WatchNode, func(e regcenter.Event) { got <- e })
			if err != nil {
				t.Fatal(err)
			}
			defer cancel()
			next := func(what string) regcenter.Event {
				t.Helper()
				select {
				case e := <-got:
					return e
				case <-time.After(20 * time.Second):
					t.Fatalf("no event %s", what)
				}
				return regcenter.Event{}
			}
			// The last three revisions are lost, as a failover would lose them.
			if _, err := a.Pool().Exec(ctx, `WITH b AS (UPDATE shardjob_rc_ns SET rev = rev - 3 WHERE ns = 'reuse' RETURNING rev)
				DELETE FROM shardjob_rc_log WHERE ns = 'reuse' AND rev > (SELECT rev FROM b)`); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Set(ctx, "/n", []byte("after"), -1); err != nil {
				t.Fatal(err)
			}
			resume()
			if e := next("after the database went back"); e.Type != regcenter.EventResync {
				t.Fatalf("first event after the database went back: %v, want resync", e.Type)
			}
			// A revision the watch was made after, now carrying a new change.
			if _, err := a.Set(ctx, "/n", []byte("again"), -1); err != nil {
				t.Fatal(err)
			}
			for {
				e := next("for a change after the resync")
				if e.Type == regcenter.EventDataChanged {
					break
				}
				if e.Type != regcenter.EventResync {
					t.Fatalf("event after the resync: %v, want data changed", e.Type)
				}
			}
		})
	}
}

// A database made by the first schema is migrated at Open to the current
// one, and what the migration replaced works: a lapsed session is reaped
// with its ephemeral node, and a session a Close ends is too.
func TestOlderSchemaMigrated(t *testing.T) {
	url := newDatabase(t, pg)
	ctx := ctxFor(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, postgres.MigrationsForTest[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "UPDATE shardjob_rc_meta SET version = 1"); err != nil {
		t.Fatal(err)
	}
	a := newCenter(t, url, regcenter.Config{Namespace: "old"})
	var v int
	if err := conn.QueryRow(ctx, "SELECT version FROM shardjob_rc_meta").Scan(&v); err != nil || v != postgres.SchemaVersion {
		t.Fatalf("schema version after Open: %d (%v), want %d", v, err, postgres.SchemaVersion)
	}
	b := newCenter(t, url, regcenter.Config{Namespace: "old"})
	if _, err := b.Create(ctx, "/b", nil, regcenter.Ephemeral); err != nil {
		t.Fatal(err)
	}
	expire(t, url, "old", b.Session().ID())
	if ok, _, err := a.Exists(ctx, "/b"); err != nil || ok {
		t.Fatalf("the lapsed session's node after a reap: exists=%v err=%v", ok, err)
	}
	c, err := postgres.Open(ctx, regcenter.Config{URL: url, Namespace: "old", SessionTimeout: sessionTimeout})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, "/c", nil, regcenter.Ephemeral); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := a.Exists(ctx, "/c"); err != nil || ok {
		t.Fatalf("a closed session's node: exists=%v err=%v", ok, err)
	}
}
