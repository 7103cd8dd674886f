package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/dispatch"
	"github.com/shardjob/shardjob/history"
	"github.com/shardjob/shardjob/internal/testing/pgtest"
)

func TestDispatchUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		say  string
	}{
		{[]string{"dispatch"}, exitUsage, "dispatch serve"},
		{[]string{"dispatch", "help"}, exitOK, "SHARDJOB_DISPATCH_TOKEN"},
		{[]string{"dispatch", "launch"}, exitUsage, `unknown command "launch"`},
		{[]string{"dispatch", "serve", "--colour", "red"}, exitUsage, "colour"},
		{[]string{"dispatch", "serve", "extra"}, exitUsage, `unexpected argument "extra"`},
	} {
		var out, errOut bytes.Buffer
		code := run(c.args, &out, &errOut)
		if code != c.code || !strings.Contains(out.String()+errOut.String(), c.say) {
			t.Errorf("%v: exit %d, want %d; output %q %q lacks %q", c.args, code, c.code, out.String(), errOut.String(), c.say)
		}
	}
	t.Setenv("SHARDJOB_DISPATCH_TOKEN", "short")
	var out, errOut bytes.Buffer
	if code := run([]string{"dispatch", "serve", "--dsn", filepath.Join(t.TempDir(), "d.db")}, &out, &errOut); code != exitUsage || !strings.Contains(errOut.String(), "SHARDJOB_DISPATCH_TOKEN") {
		t.Errorf("a short token: exit %d, %q", code, errOut.String())
	}
}

// TestDispatchServe starts the REST server on SQLite, calls it with and
// without the token, and stops it.
func TestDispatchServe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	const token = "serve-test-token-0123"
	go func() {
		done <- serveDispatch(ctx, dispatch.Config{DSN: filepath.Join(t.TempDir(), "d.db"), Logger: testLogger(t)},
			serveFlags{listen: "127.0.0.1:0"}, dispatch.HandlerConfig{Token: token}, pw)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	addr := strings.TrimSpace(strings.TrimPrefix(line, "serving on "))
	call := func(tok string) int {
		req, err := http.NewRequestWithContext(ctx, "PUT", "http://"+addr+"/v1/workers/w", strings.NewReader(`{"max_running": 3}`))
		if err != nil {
			t.Fatal(err)
		}
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := call(""); code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", code)
	}
	if code := call(token); code != http.StatusOK {
		t.Errorf("with the token: %d, want 200", code)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("serve did not stop within a minute")
	}
}

// TestDispatchServeWebhookFlags: --allow-insecure-webhooks and
// --allow-private-webhooks reach the node, so a worker's webhook may be a
// receiver on loopback over plain http; without them it is refused.
func TestDispatchServeWebhookFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
	}{
		{nil, http.StatusBadRequest},
		{[]string{"--allow-insecure-webhooks"}, http.StatusBadRequest}, // loopback still refused
		{[]string{"--allow-insecure-webhooks", "--allow-private-webhooks"}, http.StatusOK},
	} {
		args := append([]string{"--dsn", filepath.Join(t.TempDir(), "d.db"), "--listen", "127.0.0.1:0"}, c.args...)
		cfg, sf, err := parseServe(args)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		cfg.Logger = testLogger(t)
		if code := putLoopbackWebhook(t, cfg, sf); code != c.want {
			t.Errorf("%v: a worker with webhook http://127.0.0.1: %d, want %d", c.args, code, c.want)
		}
	}
}

// putLoopbackWebhook serves a node with cfg, puts a worker whose webhook
// is on loopback over plain http, stops the node and returns the answer's
// status.
func putLoopbackWebhook(t *testing.T, cfg dispatch.Config, sf serveFlags) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	const token = "serve-test-token-0123"
	go func() {
		done <- serveDispatch(ctx, cfg, sf, dispatch.HandlerConfig{Token: token}, pw)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	addr := strings.TrimSpace(strings.TrimPrefix(line, "serving on "))
	body := `{"max_running": 1, "webhook_url": "http://127.0.0.1:9/notices", "webhook_secret": "serve-test-secret-0123"}`
	req, err := http.NewRequestWithContext(ctx, "PUT", "http://"+addr+"/v1/workers/w", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("serve did not stop within a minute")
	}
	return resp.StatusCode
}

// Without a token, or with tokens that cannot be used, dispatch serve
// does not start, and says why without showing a token.
func TestDispatchServeRefusesBadTokens(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, "tokens.yaml", "- name: ci\n  role: root\n  token: secret-token-0123456789\n")
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		say  string
	}{
		{"none", nil, nil, "no token"},
		{"short", map[string]string{"SHARDJOB_DISPATCH_TOKEN": "short"}, nil, "SHARDJOB_DISPATCH_TOKEN"},
		{"bad file", nil, []string{"--tokens-file", bad}, `unknown role "root"`},
		{"bad env", map[string]string{"SHARDJOB_TOKENS": "[{name: ci, role: operator, tokenEnv: CI_TOKEN}]"}, nil, "CI_TOKEN is not set"},
		{"history alone", map[string]string{"SHARDJOB_DISPATCH_TOKEN": "serve-test-token-0123"}, []string{"--history-dsn", "h.db"}, "go together"},
	} {
		var out, errOut bytes.Buffer
		args := append([]string{"serve", "--dsn", filepath.Join(dir, "d.db"), "--listen", "127.0.0.1:0"}, c.args...)
		code := runDispatchCtx(context.Background(), args, &out, &errOut, func(k string) string { return c.env[k] })
		if code != exitUsage || !strings.Contains(errOut.String(), c.say) || strings.Contains(errOut.String(), "secret-token") {
			t.Errorf("%s: exit %d, %q; want %d saying %q", c.name, code, errOut.String(), exitUsage, c.say)
		}
	}
}

// TestDispatchServeRolesSQLite and ...Postgres: dispatch serve takes the
// tokens shardjob console takes (a tokens file, SHARDJOB_TOKENS and the
// single SHARDJOB_DISPATCH_TOKEN), enforces their roles, and writes the
// calls to the history database's audit trail, which shardjob audit reads.
func TestDispatchServeRolesSQLite(t *testing.T) {
	dir := t.TempDir()
	testDispatchServeRoles(t, []string{"--dsn", filepath.Join(dir, "d.db"), "--history-driver", "sqlite", "--history-dsn", filepath.Join(dir, "h.db")},
		[]string{"--history-driver", "sqlite", "--history-dsn", filepath.Join(dir, "h.db")})
}

func TestDispatchServeRolesPostgres(t *testing.T) {
	dsn := pgtest.NewDatabaseT(t)
	hist := []string{"--history-driver", "postgres", "--history-dsn", dsn}
	testDispatchServeRoles(t, append([]string{"--driver", "postgres", "--dsn", dsn}, hist...), hist)
}

func testDispatchServeRoles(t *testing.T, serveArgs, hist []string) {
	const (
		adminTok    = "serve-admin-token-0123"
		operatorTok = "serve-operator-token-0123"
		viewerTok   = "serve-viewer-token-0123"
		singleTok   = "serve-single-token-0123"
	)
	// A tokens file with a tokenFile beside it.
	file := writeFile(t, "tokens.yaml", "- name: ada\n  role: admin\n  tokenFile: ada.token\n- name: vera\n  role: viewer\n  token: "+viewerTok+"\n")
	if err := os.WriteFile(filepath.Join(filepath.Dir(file), "ada.token"), []byte(adminTok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"SHARDJOB_TOKENS":         "[{name: ci, role: operator, tokenEnv: CI_TOKEN}]",
		"CI_TOKEN":                operatorTok,
		"SHARDJOB_DISPATCH_TOKEN": singleTok,
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pr, pw := io.Pipe()
	var errOut bytes.Buffer
	done := make(chan int, 1)
	go func() {
		args := append([]string{"serve", "--listen", "127.0.0.1:0", "--tokens-file", file}, serveArgs...)
		done <- runDispatchCtx(ctx, args, pw, &errOut, func(k string) string { return env[k] })
		pw.Close()
	}()
	br := bufio.NewReader(pr)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("%v: %s", err, errOut.String())
	}
	lines := make(chan string, 10)
	go func() {
		defer close(lines)
		for {
			l, err := br.ReadString('\n')
			if l != "" {
				lines <- l
			}
			if err != nil {
				return
			}
		}
	}()
	addr := strings.TrimSpace(strings.TrimPrefix(line, "serving on "))
	call := func(method, path, tok, body string) int {
		req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	start := time.Now().UTC()
	assign := `{"worker": "w", "start": "` + start.Format(time.RFC3339) + `", "end": "` + start.Add(time.Hour).Format(time.RFC3339) +
		`", "tasks": [{"external_id": "r1"}]}`
	for _, c := range []struct {
		method, path, tok, body string
		want                    int
	}{
		{"PUT", "/v1/workers/w", viewerTok, `{"max_running": 3}`, http.StatusForbidden},
		{"PUT", "/v1/workers/w", operatorTok, `{"max_running": 3}`, http.StatusForbidden},
		{"PUT", "/v1/workers/w", adminTok, `{"max_running": 3}`, http.StatusOK},
		{"PUT", "/v1/global", singleTok, `{"max_running": 9}`, http.StatusOK},
		{"POST", "/v1/assign", viewerTok, assign, http.StatusForbidden},
		{"POST", "/v1/assign", operatorTok, assign, http.StatusOK},
		{"GET", "/v1/tasks?worker=w", viewerTok, "", http.StatusOK},
		{"GET", "/v1/audit", operatorTok, "", http.StatusForbidden},
		{"GET", "/v1/audit", adminTok, "", http.StatusOK},
		{"GET", "/v1/global", "nope-not-a-token-0123", "", http.StatusUnauthorized},
	} {
		if code := call(c.method, c.path, c.tok, c.body); code != c.want {
			t.Errorf("%s %s with %.12s...: %d, want %d", c.method, c.path, c.tok, code, c.want)
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("serve: exit %d: %s", code, errOut.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("serve did not stop within a minute")
	}
	for l := range lines {
		if strings.Contains(l, "not audited") {
			t.Errorf("serve with a history database says %q", l)
		}
	}
	for _, tok := range []string{adminTok, operatorTok, viewerTok, singleTok} {
		if strings.Contains(errOut.String(), tok) {
			t.Errorf("the log shows a token:\n%s", errOut.String())
		}
	}

	code, out, stderr := runCLI(append([]string{"audit", "--via", "dispatch", "-o", "json"}, hist...)...)
	if code != exitOK {
		t.Fatalf("shardjob audit: exit %d: %s", code, stderr)
	}
	var p history.AuditPage
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("shardjob audit -o json: %v: %s", err, out)
	}
	want := map[string]bool{"vera put-worker refused": true, "ci put-worker refused": true, "ada put-worker ok": true,
		"token set-global ok": true, "vera assign refused": true, "ci assign ok": true}
	for _, e := range p.Entries {
		k := e.Who + " " + e.Op + " " + string(e.Result)
		if !want[k] || e.Via != "dispatch" {
			t.Errorf("unexpected entry %+v", e)
		}
		delete(want, k)
	}
	if len(want) > 0 {
		t.Errorf("missing entries %v in %+v", want, p.Entries)
	}
	code, out, _ = runCLI(append([]string{"audit", "--via", "dispatch", "--who", "ci"}, hist...)...)
	if code != exitOK || !strings.Contains(out, "worker w") || !strings.Contains(out, "via dispatch") {
		t.Errorf("shardjob audit --who ci: exit %d:\n%s", code, out)
	}
}
