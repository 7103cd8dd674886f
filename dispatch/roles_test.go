package dispatch

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/history"
	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/jobhttp/historyhttp"
)

// The tokens of the role tests: one per role.
const (
	viewerSecret   = "viewer-secret-0123456789"
	operatorSecret = "operator-secret-0123456789"
	adminSecret    = "admin-secret-0123456789"
	wrongSecret    = "not-a-token-0123456789"
)

func roleTokens() []Token {
	return []Token{
		{Name: "vera", Role: RoleViewer, Secret: viewerSecret},
		{Name: "otto", Role: RoleOperator, Secret: operatorSecret},
		{Name: "ada", Role: RoleAdmin, Secret: adminSecret},
	}
}

// roleClient calls the REST API with one of the tokens.
type roleClient struct {
	t    *testing.T
	base string
}

// want sends a request with token (none when "") and fails the test
// unless the answer has the status code; it returns the body.
func (c roleClient) want(code int, method, path, token, body string) string {
	c.t.Helper()
	req, err := http.NewRequestWithContext(testCtx(c.t), method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	if resp.StatusCode != code {
		c.t.Fatalf("%s %s with token %.6q...: %d %s, want %d", method, path, token, resp.StatusCode, raw, code)
	}
	return string(raw)
}

// assignOne assigns one task to worker w with token and returns its UUID.
func (c roleClient) assignOne(token, id string) string {
	c.t.Helper()
	start := time.Now().UTC()
	body := `{"worker": "w", "start": "` + start.Format(time.RFC3339) + `", "end": "` + start.Add(time.Hour).Format(time.RFC3339) +
		`", "tasks": [{"external_id": "` + id + `"}]}`
	var out struct{ Tasks []TaskJSON }
	if err := json.Unmarshal([]byte(c.want(200, "POST", "/v1/assign", token, body)), &out); err != nil || len(out.Tasks) != 1 {
		c.t.Fatalf("assign: %+v %v", out, err)
	}
	return out.Tasks[0].UUID
}

// TestRolesAndAudit: on each store, each role may do what it may and is
// refused the rest, naming the role needed; every call that changes
// something, and every refusal, is in the audit trail (a history
// database), which only admins read; when the trail cannot be written
// the call is refused and not performed.
func TestRolesAndAudit(t *testing.T) {
	eachStore(t, func(t *testing.T, base Config) {
		hcfg := history.Config{Driver: history.DriverSQLite, DSN: filepath.Join(t.TempDir(), "history.db"), Logger: testlog.Logger(t)}
		if base.Driver == "postgres" {
			// The history shares the dispatcher's database, as a cluster's
			// deployment may.
			hcfg = history.Config{Driver: history.DriverPostgres, DSN: base.DSN, Logger: testlog.Logger(t)}
		}
		testRolesAndAudit(t, base, hcfg)
	})
}

func testRolesAndAudit(t *testing.T, base Config, hcfg history.Config) {
	d := open(t, base)
	aud, err := history.OpenAuditor(testCtx(t), hcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := aud.Close(); err != nil {
			t.Error(err)
		}
	})
	var logs testlog.Buffer
	h, err := NewHandler(d, HandlerConfig{Tokens: roleTokens(), Audit: historyhttp.Audit(aud),
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := roleClient{t: t, base: srv.URL}

	// Who am I.
	for _, w := range []struct{ token, name, role string }{{viewerSecret, "vera", "viewer"}, {operatorSecret, "otto", "operator"}, {adminSecret, "ada", "admin"}} {
		var who struct {
			Name, Role string
			Audited    bool
		}
		if err := json.Unmarshal([]byte(c.want(200, "GET", "/v1/whoami", w.token, "")), &who); err != nil ||
			who.Name != w.name || who.Role != w.role || !who.Audited {
			t.Errorf("whoami with %s's token: %+v %v", w.name, who, err)
		}
	}

	// Without a known token nothing is answered, not even which routes
	// exist.
	for _, tok := range []string{"", wrongSecret} {
		c.want(401, "GET", "/v1/global", tok, "")
		c.want(401, "GET", "/v1/nothing-here", tok, "")
		c.want(401, "PUT", "/v1/global", tok, `{"max_running": 1}`)
		c.want(401, "GET", "/v1/audit", tok, "")
	}

	// Admin: the configuration.
	c.want(200, "PUT", "/v1/global", adminSecret, `{"max_running": 7}`)
	c.want(200, "PUT", "/v1/workers/w", adminSecret, `{"max_running": 3}`)
	if body := c.want(403, "PUT", "/v1/global", operatorSecret, `{"max_running": 1}`); !strings.Contains(body, "set-global needs the admin role") ||
		!strings.Contains(body, `\"otto\" has operator`) {
		t.Errorf("operator's PUT /v1/global: %s", body)
	}
	c.want(403, "PUT", "/v1/workers/w", operatorSecret, `{"max_running": 1}`)
	c.want(403, "PUT", "/v1/workers/x", viewerSecret, `{"max_running": 1}`)
	if g, err := d.Global(testCtx(t)); err != nil || g.MaxRunning != 7 {
		t.Errorf("a refused PUT /v1/global changed the cap: %+v %v", g, err)
	}
	if _, err := d.Worker(testCtx(t), "x"); !errors.Is(err, ErrUnknownWorker) {
		t.Errorf("a refused PUT /v1/workers/x made the worker: %v", err)
	}

	// Operator: the tasks.
	if body := c.want(403, "POST", "/v1/assign", viewerSecret, `{}`); !strings.Contains(body, "assign needs the operator role") {
		t.Errorf("viewer's assign: %s", body)
	}
	first := c.assignOne(operatorSecret, "r1")
	byAdmin := c.assignOne(adminSecret, "r2")
	c.want(403, "POST", "/v1/tasks/"+first+"/cancel", viewerSecret, "")
	c.want(403, "POST", "/v1/tasks/"+first+"/finish", viewerSecret, "")
	c.want(200, "POST", "/v1/tasks/"+first+"/cancel", operatorSecret, "")
	c.want(409, "POST", "/v1/tasks/"+byAdmin+"/finish", operatorSecret, "") // allowed, but the task is not running

	// Viewer: the reads.
	for _, p := range []string{"/v1/global", "/v1/workers", "/v1/workers/w", "/v1/tasks", "/v1/tasks/" + first, "/v1/tasks?worker=w&status=cancelled"} {
		c.want(200, "GET", p, viewerSecret, "")
	}
	if tk, err := d.Task(testCtx(t), byAdmin); err != nil || tk.Status != StatusWaiting {
		t.Errorf("the refused cancel changed the task: %+v %v", tk, err)
	}

	// The trail: admins only.
	c.want(403, "GET", "/v1/audit", viewerSecret, "")
	if body := c.want(403, "GET", "/v1/audit", operatorSecret, ""); !strings.Contains(body, "needs the admin role") {
		t.Errorf("operator's GET /v1/audit: %s", body)
	}
	c.want(400, "GET", "/v1/audit?limit=0", adminSecret, "")
	var p history.AuditPage
	if err := json.Unmarshal([]byte(c.want(200, "GET", "/v1/audit?via=dispatch&limit=500", adminSecret, "")), &p); err != nil {
		t.Fatal(err)
	}
	find := func(who, op, result string) history.AuditEntry {
		t.Helper()
		for _, e := range p.Entries {
			if e.Who == who && e.Op == op && string(e.Result) == result {
				return e
			}
		}
		t.Fatalf("no audit entry of %s by %q with result %s in %+v", op, who, result, p.Entries)
		return history.AuditEntry{}
	}
	for _, e := range p.Entries {
		if e.Via != "dispatch" || !strings.HasPrefix(e.Remote, "127.0.0.1:") || e.At.IsZero() {
			t.Errorf("an entry not via dispatch, or without its origin: %+v", e)
		}
		if e.Result == history.AuditStarted {
			t.Errorf("an entry never ended: %+v", e)
		}
	}
	if e := find("ada", "set-global", "ok"); e.Role != "admin" {
		t.Errorf("the admin's PUT /v1/global: %+v", e)
	}
	if e := find("ada", "put-worker", "ok"); e.Job != "w" {
		t.Errorf("the admin's PUT /v1/workers/w: %+v", e)
	}
	if e := find("otto", "set-global", "refused"); !strings.Contains(e.Error, "needs the admin role") || e.Role != "operator" {
		t.Errorf("the operator's refused PUT /v1/global: %+v", e)
	}
	if e := find("vera", "put-worker", "refused"); e.Job != "x" {
		t.Errorf("the viewer's refused PUT /v1/workers/x: %+v", e)
	}
	if e := find("", "set-global", "refused"); !strings.Contains(e.Error, "unauthorized") {
		t.Errorf("the unknown token's PUT /v1/global: %+v", e)
	}
	if e := find("otto", "assign", "ok"); e.Job != "w" || e.Role != "operator" {
		t.Errorf("the operator's assign: %+v", e)
	}
	find("vera", "assign", "refused")
	if e := find("otto", "cancel", "ok"); e.Job != "w" || e.Items != first {
		t.Errorf("the operator's cancel: %+v", e)
	}
	if e := find("vera", "cancel", "refused"); e.Items != first {
		t.Errorf("the viewer's refused cancel: %+v", e)
	}
	if e := find("otto", "finish", "failed"); e.Items != byAdmin || e.Job != "w" || !strings.Contains(e.Error, "HTTP 409") {
		t.Errorf("the operator's failed finish: %+v", e)
	}
	for _, e := range p.Entries {
		if e.Op == "whoami" || strings.HasPrefix(e.Op, "GET") {
			t.Errorf("a read was audited: %+v", e)
		}
	}
	// The same trail answers shardjob audit's filters.
	only, err := aud.QueryAudit(testCtx(t), history.AuditFilter{Via: "dispatch", Who: "otto", Op: "cancel"})
	if err != nil || len(only.Entries) != 1 {
		t.Errorf("QueryAudit via dispatch, otto, cancel: %+v %v", only.Entries, err)
	}

	// Fail closed: with the trail unwritable, nothing is performed.
	if err := aud.Close(); err != nil {
		t.Fatal(err)
	}
	if body := c.want(503, "POST", "/v1/tasks/"+byAdmin+"/cancel", operatorSecret, ""); !strings.Contains(body, "audit trail cannot be written") {
		t.Errorf("a cancel with the trail closed: %s", body)
	}
	c.want(503, "PUT", "/v1/global", adminSecret, `{"max_running": 1}`)
	c.want(503, "POST", "/v1/assign", operatorSecret, `{}`)
	if tk, err := d.Task(testCtx(t), byAdmin); err != nil || tk.Status != StatusWaiting {
		t.Errorf("a cancel was performed though its audit entry could not be written: %+v %v", tk, err)
	}
	if g, err := d.Global(testCtx(t)); err != nil || g.MaxRunning != 7 {
		t.Errorf("the cap changed though its audit entry could not be written: %+v %v", g, err)
	}
	// Reads do not need the trail.
	c.want(200, "GET", "/v1/tasks/"+byAdmin, viewerSecret, "")

	// No token is ever logged.
	out := logs.String()
	for _, s := range []string{viewerSecret, operatorSecret, adminSecret, wrongSecret} {
		if strings.Contains(out, s) {
			t.Errorf("the log shows a token %q:\n%s", s, out)
		}
	}
	if !strings.Contains(out, "who=otto") {
		t.Errorf("the log does not say who was refused:\n%s", out)
	}
}

// Without an audit trail the roles hold all the same, and the single
// Token is one admin token named "token".
func TestRolesWithoutAudit(t *testing.T) {
	d := open(t, Config{DSN: filepath.Join(t.TempDir(), "d.db"), Logger: testlog.Logger(t)})
	h, err := NewHandler(d, HandlerConfig{Token: testToken, Tokens: roleTokens()[:1], Logger: testlog.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := roleClient{t: t, base: srv.URL}
	if body := c.want(200, "GET", "/v1/whoami", testToken, ""); !strings.Contains(body, `"name":"token"`) || !strings.Contains(body, `"role":"admin"`) ||
		!strings.Contains(body, `"audited":false`) {
		t.Errorf("whoami with the single token: %s", body)
	}
	c.want(200, "PUT", "/v1/workers/w", testToken, `{"max_running": 1}`)
	c.want(403, "PUT", "/v1/workers/w", viewerSecret, `{"max_running": 2}`)
	c.want(200, "GET", "/v1/workers/w", viewerSecret, "")
	c.want(404, "GET", "/v1/audit", testToken, "")
}

// A token configuration NewHandler cannot use is an error naming the
// problem, never the token.
func TestNewHandlerRefusesBadTokens(t *testing.T) {
	dir := t.TempDir()
	badFile := filepath.Join(dir, "tokens.yaml")
	if err := os.WriteFile(badFile, []byte("- name: ci\n  role: root\n  token: "+operatorSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cfg  HandlerConfig
		say  string
	}{
		{"none", HandlerConfig{}, "needs a token"},
		{"short single token", HandlerConfig{Token: "short"}, "at least 16 bytes"},
		{"no name", HandlerConfig{Tokens: []Token{{Role: RoleAdmin, Secret: adminSecret}}}, "has no name"},
		{"no role", HandlerConfig{Tokens: []Token{{Name: "ci", Secret: operatorSecret}}}, "unknown role"},
		{"empty", HandlerConfig{Tokens: []Token{{Name: "ci", Role: RoleViewer}}}, `token "ci" is empty`},
		{"same token twice", HandlerConfig{Token: adminSecret, Tokens: roleTokens()}, `tokens "token" and "ada" are the same token`},
		{"same name twice", HandlerConfig{Tokens: append(roleTokens(), Token{Name: "ada", Role: RoleViewer, Secret: wrongSecret})}, `two tokens are named "ada"`},
		{"bad file", HandlerConfig{TokensFile: badFile}, `unknown role "root"`},
		{"missing file", HandlerConfig{TokensFile: filepath.Join(dir, "nope.yaml")}, "reading the tokens file"},
	} {
		_, err := NewHandler(nil, c.cfg)
		tokensErr := errors.Is(err, ErrInvalidTokens) || c.name == "short single token"
		if !errors.Is(err, ErrInvalid) || !tokensErr {
			t.Errorf("%s: %v, want ErrInvalid and ErrInvalidTokens", c.name, err)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, c.say) {
			t.Errorf("%s: %q does not say %q", c.name, msg, c.say)
		}
		for _, s := range []string{viewerSecret, operatorSecret, adminSecret, wrongSecret} {
			if strings.Contains(msg, s) {
				t.Errorf("%s: the error shows a token: %q", c.name, msg)
			}
		}
	}
	// A good file is read.
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte("- name: ci\n  role: operator\n  tokenFile: ci.token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ci.token"), []byte(operatorSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewHandler(nil, HandlerConfig{TokensFile: good}); err != nil {
		t.Errorf("a good tokens file: %v", err)
	}
}
