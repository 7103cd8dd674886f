package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/dispatch"
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
		done <- serveDispatch(ctx, dispatch.Config{DSN: filepath.Join(t.TempDir(), "d.db"), Logger: testLogger(t)}, "127.0.0.1:0", token, pw)
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
		cfg, listen, err := parseServe(args)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		cfg.Logger = testLogger(t)
		if code := putLoopbackWebhook(t, cfg, listen); code != c.want {
			t.Errorf("%v: a worker with webhook http://127.0.0.1: %d, want %d", c.args, code, c.want)
		}
	}
}

// putLoopbackWebhook serves a node with cfg, puts a worker whose webhook
// is on loopback over plain http, stops the node and returns the answer's
// status.
func putLoopbackWebhook(t *testing.T, cfg dispatch.Config, listen string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	const token = "serve-test-token-0123"
	go func() {
		done <- serveDispatch(ctx, cfg, listen, token, pw)
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
