package authz

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// memTrail is an audit trail in memory that can be made to fail.
type memTrail struct {
	mu       sync.Mutex
	entries  []AuditRecord
	ends     map[int64]string // id → "ok" or the error, and the job: "ok job"
	failNext bool             // Begin fails
	failEnd  bool             // End fails
}

func (m *memTrail) Begin(_ context.Context, e AuditRecord) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failNext {
		return 0, errors.New("the database is gone")
	}
	m.entries = append(m.entries, e)
	return int64(len(m.entries)), nil
}

func (m *memTrail) End(_ context.Context, id int64, job string, ok bool, errText string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failEnd {
		return errors.New("the database is gone")
	}
	if m.ends == nil {
		m.ends = map[int64]string{}
	}
	res := errText
	if ok {
		res = "ok"
	}
	m.ends[id] = res + " " + job
	return nil
}

func (m *memTrail) Read(context.Context, url.Values) (any, error) { return nil, nil }

func (m *memTrail) snapshot() ([]AuditRecord, map[int64]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ends := map[int64]string{}
	for k, v := range m.ends {
		ends[k] = v
	}
	return append([]AuditRecord{}, m.entries...), ends
}

type fixedClock struct{ t time.Time }

func (c *fixedClock) now() time.Time { return c.t }

func newTestGate(trail AuditTrail, log *bytes.Buffer) *Gate {
	lg := slog.New(slog.NewTextHandler(log, nil))
	rl := NewRefusalLog(lg, "test: ")
	rl.SetClock((&fixedClock{t: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}).now)
	return &Gate{
		Keys:  NewKeyring([]Token{{Name: "vera", Role: RoleViewer, Secret: "viewer-secret"}, {Name: "otto", Role: RoleOperator, Secret: "operator-secret"}}),
		Audit: trail, Refusals: rl, Log: lg, LogPrefix: "test: ", Via: "test", Noun: "call",
		Target:       func(r *http.Request) (string, string, string) { return r.URL.Query().Get("job"), "", "" },
		Unauthorized: func(w http.ResponseWriter) { http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized) },
		Reply: func(w http.ResponseWriter, code int, msg string) {
			w.WriteHeader(code)
			_, _ = w.Write([]byte(`{"error":` + `"` + msg + `"}`))
		},
	}
}

func call(h http.HandlerFunc, token, query string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/op?"+query, nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h(w, r)
	return w
}

// The gate lets a role high enough through, audited before and after;
// refuses the rest, audited; refuses everything, performing nothing, when
// the trail cannot be written; and audits anonymous refusals only as
// often as it logs them.
func TestGate(t *testing.T) {
	trail := &memTrail{}
	var log bytes.Buffer
	g := newTestGate(trail, &log)
	performed := 0
	op := g.Op(RoleOperator, "poke", func(w http.ResponseWriter, r *http.Request) {
		performed++
		if NoteOf(r).Who.Name != "otto" {
			t.Errorf("the note names %+v", NoteOf(r).Who)
		}
		if r.URL.Query().Get("fail") != "" {
			http.Error(w, `{"error":"no such thing"}`, http.StatusNotFound)
			return
		}
		NoteOf(r).Job = "noted"
	})

	if w := call(op, "operator-secret", "job=j1"); w.Code != http.StatusOK || performed != 1 {
		t.Fatalf("operator: %d, performed %d", w.Code, performed)
	}
	if w := call(op, "operator-secret", "job=j2&fail=1"); w.Code != http.StatusNotFound || performed != 2 {
		t.Fatalf("operator, failing: %d, performed %d", w.Code, performed)
	}
	if w := call(op, "viewer-secret", "job=j3"); w.Code != http.StatusForbidden || performed != 2 ||
		!strings.Contains(w.Body.String(), `poke needs the operator role; token "vera" has viewer`) {
		t.Fatalf("viewer: %d %s, performed %d", w.Code, w.Body, performed)
	}
	for range 5 {
		if w := call(op, "", "job=j4"); w.Code != http.StatusUnauthorized {
			t.Fatalf("anonymous: %d", w.Code)
		}
	}
	entries, ends := trail.snapshot()
	if len(entries) != 4 {
		t.Fatalf("%d entries, want 4 (two performed, one refused, one anonymous): %+v", len(entries), entries)
	}
	if e := entries[0]; e.Who != "otto" || e.Role != "operator" || e.Op != "poke" || e.Job != "j1" || e.Via != "test" || e.Refused || ends[1] != "ok noted" {
		t.Errorf("the performed call: %+v, ended %q", e, ends[1])
	}
	if ends[2] != `HTTP 404: no such thing ` {
		t.Errorf("the failed call ended %q", ends[2])
	}
	if e := entries[2]; !e.Refused || e.Who != "vera" || !strings.Contains(e.Error, "needs the operator role") {
		t.Errorf("the viewer's refusal: %+v", e)
	}
	if e := entries[3]; !e.Refused || e.Who != "" || !strings.Contains(e.Error, "unauthorized") {
		t.Errorf("the anonymous refusal: %+v", e)
	}

	// Fail closed.
	trail.mu.Lock()
	trail.failNext = true
	trail.mu.Unlock()
	if w := call(op, "operator-secret", "job=j5"); w.Code != http.StatusServiceUnavailable || performed != 2 ||
		!strings.Contains(w.Body.String(), "the call was not performed") {
		t.Fatalf("with the trail failing: %d %s, performed %d", w.Code, w.Body, performed)
	}

	// An end that cannot be written: performed, and logged.
	trail.mu.Lock()
	trail.failNext, trail.failEnd = false, true
	trail.mu.Unlock()
	if w := call(op, "operator-secret", "job=j6"); w.Code != http.StatusOK || performed != 3 {
		t.Fatalf("with the end failing: %d, performed %d", w.Code, performed)
	}
	if !strings.Contains(log.String(), "its entry stays started") {
		t.Errorf("the failed end is not logged:\n%s", log.String())
	}
	for _, s := range []string{"viewer-secret", "operator-secret"} {
		if strings.Contains(log.String(), s) {
			t.Errorf("the log shows a token:\n%s", log.String())
		}
	}
}

// Collect puts the single token first, as an admin named "token", and
// checks the whole set.
func TestCollect(t *testing.T) {
	toks, err := Collect("single-secret", []Token{{Name: "vera", Role: RoleViewer, Secret: "viewer-secret"}}, "")
	if err != nil || len(toks) != 2 || toks[0].Name != LegacyTokenName || toks[0].Role != RoleAdmin {
		t.Fatalf("%+v %v", toks, err)
	}
	if _, err := Collect("viewer-secret", []Token{{Name: "vera", Role: RoleViewer, Secret: "viewer-secret"}}, ""); !errors.Is(err, ErrInvalidTokens) ||
		strings.Contains(err.Error(), "viewer-secret") {
		t.Errorf("the same token twice: %v", err)
	}
	if toks, err := Collect("", nil, ""); err != nil || len(toks) != 0 {
		t.Errorf("nothing: %+v %v", toks, err)
	}
}
