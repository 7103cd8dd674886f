package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/history"
)

func TestConsoleUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		say  string
	}{
		{[]string{"console", "--help"}, exitOK, "SHARDJOB_TOKEN"},
		{[]string{"console", "--token", "x"}, exitUsage, "token"},
		{[]string{"console", "extra"}, exitUsage, `unexpected argument "extra"`},
		{[]string{"console", "--zk", "127.0.0.1:1", "--dispatch-driver", "sqlite"}, exitUsage, "--dispatch-driver and --dispatch-dsn go together"},
		{[]string{"console", "--zk", "127.0.0.1:1", "--history-dsn", "h.db"}, exitUsage, "--history-driver and --history-dsn go together"},
		{[]string{"console"}, exitUsage, "no registry given"},
	} {
		var out, errOut strings.Builder
		code := runConsoleCtx(context.Background(), c.args[1:], &out, &errOut, func(string) string { return "" })
		if code != c.code || !strings.Contains(out.String()+errOut.String(), c.say) {
			t.Errorf("%v: exit %d, want %d; output %q %q lacks %q", c.args, code, c.code, out.String(), errOut.String(), c.say)
		}
	}
	// Bad tokens are refused before anything is opened, naming the problem.
	for _, c := range []struct {
		args []string
		env  map[string]string
		say  string
	}{
		{[]string{"--zk", "127.0.0.1:1", "--tokens-file", "/nonexistent/tokens.yaml"}, nil, "/nonexistent/tokens.yaml"},
		{[]string{"--zk", "127.0.0.1:1"}, map[string]string{"SHARDJOB_TOKENS": "[{name: a, role: root, token: s3cret}]"}, `unknown role "root"`},
		{[]string{"--zk", "127.0.0.1:1"}, map[string]string{"SHARDJOB_TOKEN": "s3cret", "SHARDJOB_TOKENS": "[{name: a, role: viewer, token: s3cret}]"}, "the same token"},
	} {
		var out, errOut strings.Builder
		code := runConsoleCtx(context.Background(), c.args, &out, &errOut, func(k string) string { return c.env[k] })
		if code != exitUsage || !strings.Contains(errOut.String(), c.say) || strings.Contains(errOut.String(), "s3cret") {
			t.Errorf("%v %v: exit %d, want %d; stderr %q should say %q and show no token", c.args, c.env, code, exitUsage, errOut.String(), c.say)
		}
	}
	if _, out, _ := runCLI("help"); !strings.Contains(out, "console [--listen ADDR]") {
		t.Errorf("the main help does not name the console:\n%s", out)
	}
}

// TestConsoleServes runs "shardjob console" against a running cluster with
// a dispatcher store, reads the page and the JSON through it, sees an
// action refused without the token and done with it, and stops it.
func TestConsoleServes(t *testing.T) {
	c := newCluster(t, everySecond("orders"), "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A history database, as the instances' history.Recorder creates it.
	histDB := filepath.Join(t.TempDir(), "history.db")
	rec, err := history.Open(ctx, history.Config{DSN: histDB})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	const token = "console-cli-token"
	env := map[string]string{"SHARDJOB_TOKEN": token, "SHARDJOB_TOKENS": "[{name: wall, role: viewer, token: console-viewer-token}]"}
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		var errOut strings.Builder
		done <- runConsoleCtx(ctx, []string{"--listen", "127.0.0.1:0", "--zk", strings.Join(zc.Servers(), ","), "--namespace", c.ns,
			"--history-driver", "sqlite", "--history-dsn", histDB, "--dispatch-driver", "sqlite", "--dispatch-dsn", filepath.Join(t.TempDir(), "d.db")}, pw, &errOut, func(k string) string { return env[k] })
		pw.Close()
		if errOut.Len() > 0 {
			t.Logf("stderr:\n%s", errOut.String())
		}
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "console: ")
	if !ok || !strings.HasSuffix(url, "/console/") {
		t.Fatalf("first line %q does not give the console's URL", line)
	}
	base := strings.TrimSuffix(url, "console/")
	call := func(method, path, tok string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, method, base+path, nil)
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
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := call("GET", "console/", ""); code != 200 || !strings.Contains(body, "shardjob console") {
		t.Errorf("GET console/: %d %.200s", code, body)
	}
	if code, body := call("GET", "jobs", ""); code != 200 || !strings.Contains(body, `"name": "orders"`) {
		t.Errorf("GET jobs: %d %s", code, body)
	}
	if code, body := call("GET", "dispatch/workers", ""); code != 200 || !strings.Contains(body, `"workers": []`) || strings.Contains(body, `"stats"`) {
		t.Errorf("GET dispatch/workers: %d %s", code, body)
	}
	if code, body := call("GET", "history?since=1h", ""); code != 200 || !strings.Contains(body, `"executions": []`) {
		t.Errorf("GET history: %d %s", code, body)
	}
	if code, _ := call("POST", "servers/s1/pause?job=orders", ""); code != http.StatusUnauthorized {
		t.Errorf("pause without the token: %d, want 401", code)
	}
	if serverOf(c.status(), "s1").Paused {
		t.Fatal("s1 paused by a refused request")
	}
	if code, body := call("POST", "servers/s1/pause?job=orders", "console-viewer-token"); code != http.StatusForbidden || !strings.Contains(body, "needs the operator role") {
		t.Errorf("pause with the viewer's token: %d %s", code, body)
	}
	if code, body := call("POST", "servers/s1/pause?job=orders", token); code != 200 {
		t.Errorf("pause with the token: %d %s", code, body)
	}
	if !serverOf(c.status(), "s1").Paused {
		t.Error("s1 not paused after the console's pause")
	}
	// The trail holds the pause and both refusals, read by "shardjob audit".
	code, out, errOut := runCLI("audit", "--history-dsn", histDB, "--op", "pause")
	if code != exitOK || !strings.Contains(out, "token (admin)") || !strings.Contains(out, "wall (viewer)") ||
		strings.Count(out, "refused") != 2 || strings.Count(out, " ok ") != 1 {
		t.Errorf("shardjob audit: exit %d\n%s%s", code, out, errOut)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("console exited %d after its context ended", code)
		}
	case <-time.After(time.Minute):
		t.Fatal("the console did not stop within a minute")
	}
}
