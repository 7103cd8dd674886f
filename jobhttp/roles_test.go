package jobhttp_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/history"
	"github.com/shardjob/shardjob/internal/testing/pgtest"
	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobhttp"
	"github.com/shardjob/shardjob/jobhttp/historyhttp"
	"github.com/shardjob/shardjob/regcenter"
)

// The tokens of the role tests: one per role.
const (
	viewerSecret   = "viewer-secret-0123456789"
	operatorSecret = "operator-secret-0123456789"
	adminSecret    = "admin-secret-0123456789"
	wrongSecret    = "not-a-token-0123456789"
)

func roleTokens() []jobhttp.Token {
	return []jobhttp.Token{
		{Name: "vera", Role: jobhttp.RoleViewer, Secret: viewerSecret},
		{Name: "otto", Role: jobhttp.RoleOperator, Secret: operatorSecret},
		{Name: "ada", Role: jobhttp.RoleAdmin, Secret: adminSecret},
	}
}

func TestParseTokens(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "alice.token"), []byte("  from-a-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CI_TOKEN": "from-the-env"}
	getenv := func(k string) string { return env[k] }
	doc := `
- name: alice
  role: admin
  tokenFile: alice.token
- name: ci
  role: operator
  tokenEnv: CI_TOKEN
- name: dashboard
  role: Viewer
  token: literal-token
`
	toks, err := jobhttp.ParseTokens([]byte(doc), dir, getenv)
	if err != nil {
		t.Fatal(err)
	}
	want := []jobhttp.Token{{Name: "alice", Role: jobhttp.RoleAdmin, Secret: "from-a-file"},
		{Name: "ci", Role: jobhttp.RoleOperator, Secret: "from-the-env"}, {Name: "dashboard", Role: jobhttp.RoleViewer, Secret: "literal-token"}}
	if len(toks) != len(want) {
		t.Fatalf("%+v", toks)
	}
	for i := range want {
		if toks[i] != want[i] {
			t.Errorf("token %d: %+v, want %+v", i, toks[i], want[i])
		}
	}

	for _, c := range []struct{ name, doc, want string }{
		{"unknown role", "- {name: a, role: root, token: s3cret-a}", `unknown role "root"`},
		{"duplicate name", "- {name: a, role: admin, token: s3cret-a}\n- {name: a, role: viewer, token: s3cret-b}", `two tokens are named "a"`},
		{"duplicate token", "- {name: a, role: admin, token: s3cret-a}\n- {name: b, role: viewer, token: s3cret-a}", `tokens "a" and "b" are the same token`},
		{"empty token", "- {name: a, role: admin, token: ''}", "exactly one of token, tokenFile and tokenEnv"},
		{"two sources", "- {name: a, role: admin, token: s3cret-a, tokenEnv: CI_TOKEN}", "exactly one of"},
		{"no name", "- {role: admin, token: s3cret-a}", "has no name"},
		{"unreadable file", "- {name: a, role: admin, tokenFile: missing.token}", "missing.token"},
		{"unset env", "- {name: a, role: admin, tokenEnv: NOPE}", "NOPE is not set"},
		{"unknown key", "- {name: a, role: admin, secret: s3cret-a}", "secret"},
		{"not a list", "name: a", "not a list"},
		{"empty", "", "lists no token"},
	} {
		_, err := jobhttp.ParseTokens([]byte(c.doc), dir, getenv)
		if !errors.Is(err, jobhttp.ErrInvalidTokens) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrInvalidTokens saying %q", c.name, err, c.want)
		} else if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: the error shows a token: %v", c.name, err)
		}
	}

	if _, err := jobhttp.LoadTokens(filepath.Join(dir, "nope.yaml")); !errors.Is(err, jobhttp.ErrInvalidTokens) || !strings.Contains(err.Error(), "nope.yaml") {
		t.Errorf("unreadable tokens file: %v", err)
	}
	file := filepath.Join(dir, "tokens.yaml")
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	env[jobhttp.EnvTokensFile] = file
	env[jobhttp.EnvTokens] = "[{name: extra, role: viewer, token: extra-token}]"
	toks, err = jobhttp.TokensFromEnv(getenv)
	if err != nil || len(toks) != 4 || toks[3].Name != "extra" {
		t.Errorf("TokensFromEnv: %+v %v", toks, err)
	}
	env[jobhttp.EnvTokens] = "[{name: alice, role: viewer, token: other}]"
	if _, err := jobhttp.TokensFromEnv(getenv); !errors.Is(err, jobhttp.ErrInvalidTokens) || !strings.Contains(err.Error(), `"alice"`) {
		t.Errorf("a name in both the file and the env: %v", err)
	}
}

// TestNewRefusesBadTokens: the handler's tokens are checked at
// construction; NewHandler with them refuses every request.
func TestNewRefusesBadTokens(t *testing.T) {
	for _, c := range []struct {
		name string
		opts jobhttp.Options
		want string
	}{
		{"legacy token taken again", jobhttp.Options{Token: "same", Tokens: []jobhttp.Token{{Name: "b", Role: jobhttp.RoleViewer, Secret: "same"}}}, `"token" and "b" are the same token`},
		{"no role", jobhttp.Options{Tokens: []jobhttp.Token{{Name: "b", Secret: "x"}}}, "unknown role"},
		{"empty", jobhttp.Options{Tokens: []jobhttp.Token{{Name: "b", Role: jobhttp.RoleAdmin}}}, `token "b" is empty`},
		{"spaces", jobhttp.Options{Tokens: []jobhttp.Token{{Name: "b", Role: jobhttp.RoleAdmin, Secret: "x "}}}, "white space"},
		{"tokens file", jobhttp.Options{TokensFile: filepath.Join(t.TempDir(), "none.yaml")}, "none.yaml"},
	} {
		_, err := jobhttp.New(nil, c.opts)
		if !errors.Is(err, jobhttp.ErrInvalidTokens) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrInvalidTokens saying %q", c.name, err, c.want)
		}
	}
	srv := httptest.NewServer(jobhttp.NewHandler(nil, jobhttp.Options{Tokens: []jobhttp.Token{{Name: "b", Secret: "x"}}, Logger: testLogger(t)}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/jobs")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("GET /jobs on a misconfigured handler: %d, want 500", resp.StatusCode)
	}
}

// openRecorderOn opens a history recorder on cfg, closed when t ends.
func openRecorderOn(t *testing.T, cfg history.Config) *history.Recorder {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg.Logger = testLogger(t)
	rec, err := history.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rec.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return rec
}

func auditPage(t *testing.T, hc *httpCluster, query string) history.AuditPage {
	t.Helper()
	var p history.AuditPage
	if err := json.Unmarshal([]byte(hc.want(200, "GET", "/audit"+query, adminSecret, "")), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// findAudit returns the newest entry of op by who on job report, or fails.
func findAudit(t *testing.T, p history.AuditPage, who, op string) history.AuditEntry {
	t.Helper()
	for _, e := range p.Entries {
		if e.Who == who && e.Op == op && e.Job == "report" {
			return e
		}
	}
	t.Fatalf("no audit entry of %s by %q in %+v", op, who, p.Entries)
	return history.AuditEntry{}
}

// TestRolesAndAuditSQLite and ...Postgres: each role may do what it may
// and is refused the rest, naming the role needed; every operation and
// every refusal is in the audit trail, which only admins read; when the
// trail cannot be written the operation is refused and not performed.
func TestRolesAndAuditSQLite(t *testing.T) {
	testRolesAndAudit(t, history.Config{DSN: filepath.Join(t.TempDir(), "h.db")})
}

func TestRolesAndAuditPostgres(t *testing.T) {
	dsn := pgtest.NewDatabaseT(t)
	testRolesAndAudit(t, history.Config{Driver: history.DriverPostgres, DSN: dsn})
}

func testRolesAndAudit(t *testing.T, hcfg history.Config) {
	rec := openRecorderOn(t, hcfg)
	var logs testlog.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	hc := newHTTPClusterWith(t, job.Config{Name: "report", Cron: "0 0 0 1 1 *", ShardingTotalCount: 4},
		jobhttp.Options{Tokens: roleTokens(), Logger: log, Audit: historyhttp.Audit(rec)}, regcenter.Config{Servers: zc.Servers()})
	httpWaitFor(t, "both instances online", func() bool {
		st := hc.status()
		return len(st.Servers) == 2 && st.Servers[0].Online && st.Servers[1].Online
	})

	// Who am I.
	for _, c := range []struct{ token, name, role string }{{"", "", ""}, {viewerSecret, "vera", "viewer"}, {operatorSecret, "otto", "operator"}, {adminSecret, "ada", "admin"}} {
		var who struct{ Name, Role string }
		if err := json.Unmarshal([]byte(hc.want(200, "GET", "/whoami", c.token, "")), &who); err != nil || who.Name != c.name || who.Role != c.role {
			t.Errorf("whoami with %q's token: %+v %v", c.name, who, err)
		}
	}
	hc.want(401, "GET", "/whoami", wrongSecret, "")

	// Refusals: unknown, too low.
	hc.want(401, "POST", "/jobs/report/trigger", wrongSecret, "")
	if body := hc.want(403, "POST", "/jobs/report/trigger", viewerSecret, ""); !strings.Contains(body, "needs the operator role") || !strings.Contains(body, `\"vera\" has viewer`) {
		t.Errorf("viewer's trigger: %s", body)
	}
	if body := hc.want(403, "POST", "/jobs/report/schedule", operatorSecret, `{"shardingTotalCount": 2}`); !strings.Contains(body, "needs the admin role") {
		t.Errorf("operator's schedule edit: %s", body)
	}
	hc.want(403, "POST", "/jobs/report/remove", operatorSecret, "")
	if st := hc.status(); st.Servers[0].TriggerPending || st.Servers[1].TriggerPending || len(st.Items) != 4 {
		t.Errorf("a refused operation changed something: %+v", st)
	}

	// What each role may do.
	hc.want(200, "POST", "/jobs/report/trigger", operatorSecret, "")
	httpWaitFor(t, "the triggered items", func() bool { return hc.triggered("a1")+hc.triggered("a2") == 4 })
	hc.want(200, "POST", "/servers/a1/disable?job=report", operatorSecret, "")
	hc.want(404, "POST", "/jobs/nope/trigger", operatorSecret, "")
	hc.want(200, "POST", "/jobs/report/schedule", adminSecret, `{"shardingTotalCount": 6}`)

	// The trail: admins only.
	hc.want(401, "GET", "/audit", "", "")
	hc.want(403, "GET", "/audit", viewerSecret, "")
	if body := hc.want(403, "GET", "/audit", operatorSecret, ""); !strings.Contains(body, "needs the admin role") {
		t.Errorf("operator's GET /audit: %s", body)
	}
	p := auditPage(t, hc, "")
	trig := findAudit(t, p, "otto", "trigger")
	if trig.Result != history.AuditOK || trig.Job != "report" || trig.Role != "operator" || trig.Via != "http" ||
		!strings.HasPrefix(trig.Remote, "127.0.0.1:") || trig.At.IsZero() {
		t.Errorf("the operator's trigger: %+v", trig)
	}
	if e := findAudit(t, p, "vera", "trigger"); e.Result != history.AuditRefused || !strings.Contains(e.Error, "needs the operator role") {
		t.Errorf("the viewer's refused trigger: %+v", e)
	}
	if e := findAudit(t, p, "", "trigger"); e.Result != history.AuditRefused || !strings.Contains(e.Error, "unauthorized") {
		t.Errorf("the unknown token's trigger: %+v", e)
	}
	if e := findAudit(t, p, "otto", "disable"); e.Result != history.AuditOK || e.Server != "a1" || e.Job != "report" {
		t.Errorf("the disable: %+v", e)
	}
	if e := findAudit(t, p, "ada", "schedule"); e.Result != history.AuditOK || e.Role != "admin" {
		t.Errorf("the schedule edit: %+v", e)
	}
	for _, e := range p.Entries {
		if e.Job == "nope" && (e.Result != history.AuditFailed || !strings.Contains(e.Error, "HTTP 404")) {
			t.Errorf("the failed trigger: %+v", e)
		}
	}
	if only := auditPage(t, hc, "?who=otto&op=disable"); len(only.Entries) != 1 {
		t.Errorf("GET /audit?who=otto&op=disable: %+v", only.Entries)
	}
	hc.want(400, "GET", "/audit?limit=0", adminSecret, "")

	// Fail closed: with the trail unwritable, nothing is performed.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if body := hc.want(503, "POST", "/servers/a2/disable?job=report", operatorSecret, ""); !strings.Contains(body, "audit trail cannot be written") {
		t.Errorf("an operation with the trail closed: %s", body)
	}
	for _, s := range hc.status().Servers {
		if s.ID == "a2" && s.Disabled {
			t.Errorf("a2 was disabled though its audit entry could not be written")
		}
	}

	// No token is ever logged.
	out := logs.String()
	for _, s := range []string{viewerSecret, operatorSecret, adminSecret, wrongSecret} {
		if strings.Contains(out, s) {
			t.Errorf("the log shows a token %q:\n%s", s, out)
		}
	}
	if !strings.Contains(out, "who=otto") {
		t.Errorf("the log does not say who operated:\n%s", out)
	}
}
