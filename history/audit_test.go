package history

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestAuditTrail(t *testing.T) {
	eachDB(t, func(t *testing.T, cfg Config) {
		r := open(t, cfg)
		ctx := t.Context()
		at := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
		id, err := r.Audit(ctx, AuditEntry{At: at, Who: "alice", Role: "operator", Op: "disable", Server: "s1", Job: "orders",
			Via: "http", Remote: "10.0.0.7:5050"})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.EndAudit(ctx, id, "", AuditOK, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Audit(ctx, AuditEntry{At: at.Add(time.Second), Who: "bob", Role: "viewer", Op: "trigger", Job: "orders",
			Via: "http", Remote: "10.0.0.8:1", Result: AuditRefused, Error: "forbidden:\nneeds operator"}); err != nil {
			t.Fatal(err)
		}
		created, err := r.Audit(ctx, AuditEntry{At: at.Add(2 * time.Second), Who: "root", Op: "create", Via: "cli", Remote: "ops-host"})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.EndAudit(ctx, created, "billing", AuditFailed, "already exists"); err != nil {
			t.Fatal(err)
		}

		all, err := r.QueryAudit(ctx, AuditFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(all.Entries) != 3 {
			t.Fatalf("%d entries, want 3: %+v", len(all.Entries), all.Entries)
		}
		newest, mid, oldest := all.Entries[0], all.Entries[1], all.Entries[2]
		if newest.Job != "billing" || newest.Result != AuditFailed || newest.Error != "already exists" || newest.Via != "cli" {
			t.Errorf("ended entry: %+v", newest)
		}
		if mid.Result != AuditRefused || mid.Error != "forbidden: needs operator" {
			t.Errorf("refused entry (error folded to one line): %+v", mid)
		}
		if oldest.Who != "alice" || oldest.Result != AuditOK || !oldest.At.Equal(at) || oldest.Remote != "10.0.0.7:5050" {
			t.Errorf("oldest: %+v", oldest)
		}

		for _, c := range []struct {
			f    AuditFilter
			want int
		}{
			{AuditFilter{Who: "alice"}, 1},
			{AuditFilter{Job: "orders"}, 2},
			{AuditFilter{Op: "trigger"}, 1},
			{AuditFilter{Server: "s1", Who: "alice"}, 1},
			{AuditFilter{Since: at.Add(time.Second)}, 2},
			{AuditFilter{Who: "nobody"}, 0},
			{AuditFilter{Via: "http"}, 2},
			{AuditFilter{Via: "cli", Who: "root"}, 1},
			{AuditFilter{Via: "dispatch"}, 0},
		} {
			p, err := r.QueryAudit(ctx, c.f)
			if err != nil || len(p.Entries) != c.want {
				t.Errorf("%+v: %d entries (%v), want %d", c.f, len(p.Entries), err, c.want)
			}
		}
		// Paging.
		p1, err := r.QueryAudit(ctx, AuditFilter{Limit: 2})
		if err != nil || len(p1.Entries) != 2 || p1.Next == "" {
			t.Fatalf("page 1: %+v %v", p1, err)
		}
		p2, err := r.QueryAudit(ctx, AuditFilter{Limit: 2, Before: p1.Next})
		if err != nil || len(p2.Entries) != 1 || p2.Entries[0].Who != "alice" || p2.Next != "" {
			t.Errorf("page 2: %+v %v", p2, err)
		}

		// Bad input is refused, naming the problem, and stores nothing.
		if _, err := r.Audit(ctx, AuditEntry{Who: "x"}); !errors.Is(err, ErrInvalidAudit) || !strings.Contains(err.Error(), "Op") {
			t.Errorf("no op: %v", err)
		}
		if _, err := r.Audit(ctx, AuditEntry{Op: "x", Result: "maybe"}); !errors.Is(err, ErrInvalidAudit) {
			t.Errorf("bad result: %v", err)
		}
		if err := r.EndAudit(ctx, 987654, "", AuditOK, ""); !errors.Is(err, ErrInvalidAudit) {
			t.Errorf("end of an unknown entry: %v", err)
		}
		if err := r.EndAudit(ctx, id, "", AuditStarted, ""); !errors.Is(err, ErrInvalidAudit) {
			t.Errorf("end as started: %v", err)
		}
		if _, err := r.QueryAudit(ctx, AuditFilter{Limit: MaxLimit + 1}); !errors.Is(err, ErrInvalidFilter) {
			t.Errorf("limit: %v", err)
		}
		if p, _ := r.QueryAudit(ctx, AuditFilter{}); len(p.Entries) != 3 {
			t.Errorf("refused writes stored something: %d entries", len(p.Entries))
		}

		// A Reader reads the same trail.
		rd, err := OpenReader(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		rp, err := rd.QueryAudit(ctx, AuditFilter{Who: "root"})
		if err != nil || len(rp.Entries) != 1 || rp.Entries[0].Op != "create" {
			t.Errorf("reader: %+v %v", rp, err)
		}
	})
}

func TestAuditRetention(t *testing.T) {
	eachDB(t, func(t *testing.T, cfg Config) {
		cfg.AuditMaxAge = time.Hour
		r := open(t, cfg)
		now := time.Now()
		for i := range 5 {
			at := now
			if i < 3 {
				at = now.Add(-2 * time.Hour) // past AuditMaxAge, within MaxAge
			}
			if _, err := r.Audit(t.Context(), AuditEntry{At: at, Op: "trigger", Result: AuditOK}); err != nil {
				t.Fatal(err)
			}
		}
		p, err := r.Prune(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if p.Audit != 3 {
			t.Errorf("pruned %+v, want 3 audit entries", p)
		}
		page, err := r.QueryAudit(t.Context(), AuditFilter{})
		if err != nil || len(page.Entries) != 2 {
			t.Errorf("kept %d entries (%v), want 2", len(page.Entries), err)
		}
	})
}

func TestAuditAfterClose(t *testing.T) {
	cfg := Config{DSN: filepath.Join(t.TempDir(), "h.db")}
	r, err := Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Audit(t.Context(), AuditEntry{Op: "trigger"}); !errors.Is(err, ErrClosed) {
		t.Errorf("audit after close: %v, want ErrClosed", err)
	}
}

// TestAuditor: a tool's Auditor writes into the same trail a Recorder
// reads, and creates the tables when it comes first.
func TestAuditor(t *testing.T) {
	eachDB(t, func(t *testing.T, cfg Config) {
		a, err := OpenAuditor(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		id, err := a.Audit(t.Context(), AuditEntry{Who: "root", Op: "drain", Server: "s9", Via: "cli", Remote: "ops"})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.EndAudit(t.Context(), id, "", AuditOK, ""); err != nil {
			t.Fatal(err)
		}
		r := open(t, cfg)
		p, err := r.QueryAudit(t.Context(), AuditFilter{Server: "s9"})
		if err != nil || len(p.Entries) != 1 || p.Entries[0].Result != AuditOK || p.Entries[0].Who != "root" {
			t.Errorf("the recorder reads %+v %v", p, err)
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Audit(t.Context(), AuditEntry{Op: "drain"}); !errors.Is(err, ErrClosed) {
			t.Errorf("after close: %v", err)
		}
	})
}
