package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/jobfile"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

func writeJobsFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "jobs.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunRefusesBadInput(t *testing.T) {
	rc := "regcenter:\n  servers: [127.0.0.1:1]\n  namespace: x\njobs:\n  - name: a\n    cron: '@hourly'\n    shardingTotalCount: 1\n"
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no file", nil, "want one FILE"},
		{"missing file", []string{"/nonexistent/jobs.yaml"}, "no such file"},
		{"unknown key", []string{writeJobsFile(t, rc+"    type: script\n    script: {command: [x]}\n    retries: 3\n")}, `unknown key "retries"`},
		{"go-bound job", []string{writeJobsFile(t, rc)}, `job "a" is a simple job, bound to Go code`},
		{"bad section", []string{writeJobsFile(t, rc+"    type: http\n    http: {url: \"gopher://x\"}\n")}, "scheme must be http or https"},
		{"bad tracing", []string{writeJobsFile(t, "tracing: {exporter: otlp, sampleRatio: 2}\n"+rc+"    type: script\n    script: {command: [x]}\n")}, "tracing.sampleRatio at line 1: 2 is out of range"},
		{"bad flag", []string{"--shutdown-timeout", "0s", "x.yaml"}, "must be positive"},
		{"follow-scripts alone", []string{"--follow-scripts", "x.yaml"}, "--follow-scripts needs --follow"},
	} {
		var out, errb testlog.Buffer
		code := runFileCtx(context.Background(), c.args, &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and %q", c.name, code, errb.String(), exitUsage, c.want)
		}
	}
}

// shardjob run runs a YAML file's script job until it is stopped.
func TestRunRunsAScriptJob(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "ran")
	path := writeJobsFile(t, fmt.Sprintf(`regcenter:
  servers: [%s]
  namespace: %s
jobs:
  - name: hello
    type: script
    cron: "* * * * * *"
    shardingTotalCount: 2
    script:
      command: [/bin/sh, -c, 'echo "$0" >> %s', item]
`, strings.Join(zc.Servers(), ","), newNamespace(), out))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr testlog.Buffer
	done := make(chan int, 1)
	go func() { // owned here: ends when ctx is cancelled below
		done <- runFileCtx(ctx, []string{"--server-id", "cli-run", "--state-dir", filepath.Join(dir, "state"), path}, &stdout, &stderr)
	}()
	deadline := time.After(60 * time.Second)
	for {
		data, _ := os.ReadFile(out)
		if strings.Count(string(data), "\n") >= 2 {
			break
		}
		select {
		case code := <-done:
			t.Fatalf("shardjob run ended with %d: %s", code, stderr.String())
		case <-deadline:
			t.Fatalf("no runs within a minute: %s", stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("exit %d after stop: %s", code, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("shardjob run did not stop")
	}
}

// shardjob run --follow runs an HTTP job defined while it runs.
func TestRunFollowRunsADefinedJob(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	ns := newNamespace()
	path := writeJobsFile(t, fmt.Sprintf("regcenter:\n  servers: [%s]\n  namespace: %s\njobs: []\n", strings.Join(zc.Servers(), ","), ns))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr testlog.Buffer
	done := make(chan int, 1)
	go func() { // owned here: ends when ctx is cancelled below
		done <- runFileCtx(ctx, []string{"--server-id", "cli-follow", "--follow", path}, &stdout, &stderr)
	}()

	dctx, dcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer dcancel()
	rc, err := zookeeper.Open(dctx, regcenter.Config{Servers: zc.Servers(), Namespace: ns}, regcenter.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := rc.Close(); err != nil {
			t.Error(err)
		}
	}()
	def := fmt.Sprintf("name: ping\ncron: \"* * * * * *\"\nshardingTotalCount: 1\ntype: http\nhttp: {url: %q, allowPrivateAddresses: true}\n", srv.URL)
	if _, err := jobfile.Define(dctx, rc, []byte(def)); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(60 * time.Second)
	for hits.Load() < 2 {
		select {
		case code := <-done:
			t.Fatalf("shardjob run ended with %d: %s", code, stderr.String())
		case <-deadline:
			t.Fatalf("the defined job did not run within a minute: %s", stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("exit %d after stop: %s", code, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("shardjob run did not stop")
	}
	if !strings.Contains(stderr.String(), "job definition followed: job added") {
		t.Fatalf("no line about the followed job in the log:\n%s", stderr.String())
	}
}

// The default server id is one per process (address and pid), not the
// host's address: the help an operator reads says so.
func TestHelpSaysTheDefaultServerIDIsOnePerProcess(t *testing.T) {
	_, mainHelp, _ := runCLI("help")
	_, runHelpOut, runHelpErr := runCLI("run", "--help")
	for name, text := range map[string]string{"shardjob help": mainHelp, "shardjob run --help": runHelpOut + runHelpErr} {
		if !strings.Contains(text, "one per process") || !strings.Contains(text, "@-@") {
			t.Errorf("%s does not say the default server id is one per process (address@-@pid):\n%s", name, text)
		}
		if strings.Contains(text, "by default its IP address") || strings.Contains(text, "default: the host's address") {
			t.Errorf("%s still says the default server id is the host's address", name)
		}
	}
}

// shardjob run --embedded DIR shares the member of DIR among the
// instances that name it: the first hosts it, the second connects, and
// the job's items are shared between the two, with no server to start.
func TestRunSharesAnEmbeddedDir(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "ran")
	member := filepath.Join(dir, "member")
	path := writeJobsFile(t, fmt.Sprintf(`regcenter:
  servers: [127.0.0.1:1]
  namespace: %s
  sessionTimeout: 3s
jobs:
  - name: hello
    type: script
    cron: "* * * * * *"
    shardingTotalCount: 2
    script:
      command: [/bin/sh, -c, 'echo "$SHARDJOB_SHARDING_CONTEXT" >> %s']
`, newNamespace(), out))
	ids := []string{"emb-one", "emb-two"}
	var cancels [2]context.CancelFunc
	var dones [2]chan int
	var stderr [2]testlog.Buffer
	for i, id := range ids {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cancels[i], dones[i] = cancel, make(chan int, 1)
		go func() { // owned here: ends when ctx is cancelled below
			var stdout testlog.Buffer
			dones[i] <- runFileCtx(ctx, []string{"--embedded", member, "--server-id", id, "--state-dir", filepath.Join(dir, id), path}, &stdout, &stderr[i])
		}()
		if i == 0 { // the first hosts; the second finds it serving
			deadline := time.After(60 * time.Second)
			for !strings.Contains(stderr[0].String(), "msg=running") {
				select {
				case code := <-dones[0]:
					t.Fatalf("shardjob run --embedded ended with %d: %s", code, stderr[0].String())
				case <-deadline:
					t.Fatalf("the first instance is not running within a minute: %s", stderr[0].String())
				case <-time.After(50 * time.Millisecond):
				}
			}
		}
	}
	deadline := time.After(90 * time.Second)
	for {
		data, _ := os.ReadFile(out)
		if strings.Contains(string(data), ids[0]) && strings.Contains(string(data), ids[1]) {
			break
		}
		select {
		case code := <-dones[0]:
			t.Fatalf("the first instance ended with %d: %s", code, stderr[0].String())
		case code := <-dones[1]:
			t.Fatalf("the second instance ended with %d: %s", code, stderr[1].String())
		case <-deadline:
			t.Fatalf("the items are not shared between both instances within 90s (ran: %q):\n%s\n%s", data, stderr[0].String(), stderr[1].String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	// The instance that joined stops first, then the host (see
	// embedded.Shared.Close).
	for _, i := range []int{1, 0} {
		cancels[i]()
		select {
		case code := <-dones[i]:
			if code != exitOK {
				t.Errorf("%s: exit %d after stop:\n%s", ids[i], code, stderr[i].String())
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("%s did not stop", ids[i])
		}
	}
}
