package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardjob/shardjob/regcenter"
)

// TestPostgresALateWriteActsOnNoNewerNode: a write the client gave up on
// (its answer out of time) may still be run by the server — a statement
// held up on the way. By then the node it names may have been deleted (by
// the retry that went through) and made again, by another instance or by
// the same session for its next run. Run then, the write must change
// nothing: a running mark's late delete would otherwise remove the mark
// another run holds. The test sends the statement as the client sent it,
// with the revision it had seen, after the node was made again.
func TestPostgresALateWriteActsOnNoNewerNode(t *testing.T) {
	url := newDatabase(t, pg)
	c := newCenter(t, url, regcenter.Config{Namespace: "late"})
	other := newCenter(t, url, regcenter.Config{Namespace: "late"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	const (
		opSet    = 2
		opDelete = 3
		opCheck  = 4
	)
	for _, tc := range []struct {
		name    string
		kind    int16
		version int32
		remake  regcenter.Center
	}{
		{"delete, made again by another session", opDelete, -1, other},
		{"delete, made again by the same session", opDelete, -1, c},
		{"versioned delete", opDelete, 0, other},
		{"set", opSet, -1, c},
		{"versioned set", opSet, 0, other},
		{"check", opCheck, 0, c},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := "/" + strings.ReplaceAll(tc.name, " ", "-")
			if _, err := c.Create(ctx, p, []byte("first"), regcenter.Ephemeral); err != nil {
				t.Fatal(err)
			}
			sent := c.Seen()
			if sent <= 0 {
				t.Fatalf("the revision seen after a create is %d", sent)
			}
			if err := c.Delete(ctx, p, -1); err != nil {
				t.Fatal(err)
			}
			if _, err := tc.remake.Create(ctx, p, []byte("second"), regcenter.Ephemeral); err != nil {
				t.Fatal(err)
			}
			_, before, err := c.Exists(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			_, err = conn.Exec(ctx, `SELECT * FROM shardjob_rc_write_seen($1, $2, 0, 0, false, $3, $4, $5, $6, $7)`,
				"late", sent, []int16{tc.kind}, []string{p}, [][]byte{[]byte("late")}, []int32{tc.version}, []int16{0})
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || !strings.HasPrefix(pe.Message, "shardjob:unseen:0:") {
				t.Errorf("the write run late: %v, want it refused as unseen at op 0", err)
			}
			data, after, err := c.Get(ctx, p)
			if err != nil {
				t.Fatalf("the node made again, after the late write: %v", err)
			}
			if string(data) != "second" || after != before {
				t.Errorf("the node made again changed: %q %+v, was %+v", data, after, before)
			}
			if err := tc.remake.Delete(ctx, p, -1); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestPostgresAWriteCatchesUpOnANodeItHasNotSeen: a node made by another
// client after this one last read is no reason to fail a write sent now:
// the server's refusal names its revision, and the write goes again.
func TestPostgresAWriteCatchesUpOnANodeItHasNotSeen(t *testing.T) {
	url := newDatabase(t, pg)
	c := newCenter(t, url, regcenter.Config{Namespace: "catchup"})
	other := newCenter(t, url, regcenter.Config{Namespace: "catchup"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	release := c.PauseWatches()
	defer release()
	before := c.Seen()
	if _, err := other.Create(ctx, "/n", []byte("x"), regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	if c.Seen() != before {
		t.Fatalf("the revision seen moved from %d to %d with the watches held", before, c.Seen())
	}
	sent := c.Stats()
	if err := c.Multi(ctx, regcenter.SetOp{Path: "/n", Data: []byte("y"), Version: 0}); err != nil {
		t.Fatalf("a set of a node made by another client meanwhile: %v", err)
	}
	if d := c.Stats().Sub(sent); d.Total() != 2 {
		t.Errorf("the set sent %+v; want two requests (refused as unseen, then sent again)", d)
	}
	if data, _, err := other.Get(ctx, "/n"); err != nil || string(data) != "y" {
		t.Errorf("the node after the set: %q, %v", data, err)
	}
}
