package main

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shardjob/shardjob/internal/layout"
)

// TestDigestACL runs a cluster whose registry center has a digest: a plain
// ZooKeeper client without it can neither read nor change anything under
// the namespace, the command with the right --digest works, and with a
// wrong or missing one it fails with one line and exit code 1.
func TestAdminDigestACL(t *testing.T) {
	t.Parallel()
	c := newCluster(t, everySecond("orders"), "ops:secret")
	c.warmUp()

	conn, events, err := zk.Connect(zc.Servers(), 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	waitSession(t, events)
	root := "/" + c.ns
	paths := layout.Job("orders")
	config := root + paths.Config()
	status := root + paths.Flag("s1", layout.Status)
	noAuth := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("%s without the digest: err %v, want %v", what, err, zk.ErrNoAuth)
		}
	}
	_, _, err = conn.Get(root)
	noAuth("get namespace root", err)
	_, _, err = conn.Children(root)
	noAuth("list jobs", err)
	_, _, err = conn.Get(config)
	noAuth("get config", err)
	_, _, err = conn.Get(status)
	noAuth("get status", err)
	_, _, err = conn.Children(root + paths.Servers())
	noAuth("list servers", err)
	_, err = conn.Set(config, []byte("name: orders\ncron: [\n"), -1)
	noAuth("set config", err)
	_, err = conn.Create(root+paths.Flag("s1", layout.Disabled), nil, 0, zk.WorldACL(zk.PermAll))
	noAuth("create disabled flag", err)
	_, err = conn.Create(root+"/evil", nil, 0, zk.WorldACL(zk.PermAll))
	noAuth("create job", err)
	noAuth("delete config", conn.Delete(config, -1))
	noAuth("delete status", conn.Delete(status, -1))
	noAuth("set ACL", func() error { _, err := conn.SetACL(config, zk.WorldACL(zk.PermAll), -1); return err }())

	// The right digest.
	out := c.mustCLI("jobs")
	if !strings.Contains(out, "orders") {
		t.Errorf("jobs with the digest:\n%s", out)
	}
	c.mustCLI("pause", "s1", "--job", "orders")
	if !serverOf(c.status(), "s1").Paused {
		t.Errorf("pause with the digest did not take")
	}
	c.mustCLI("resume", "s1", "--job", "orders")

	// A wrong one, and none.
	zkList := strings.Join(zc.Servers(), ",")
	for _, digest := range []string{"ops:wrong", "intruder:secret"} {
		args := []string{"jobs", "--zk", zkList, "--namespace", c.ns, "--digest", digest}
		code, o, e := runCLI(args...)
		checkFailure(t, args, exitFailed, []string{"not authorized", "/" + c.ns}, code, o, e)
		args = []string{"disable", "s1", "--zk", zkList, "--namespace", c.ns, "--digest", digest}
		code, o, e = runCLI(args...)
		checkFailure(t, args, exitFailed, []string{"not authorized"}, code, o, e)
	}
	args := []string{"status", "orders", "--zk", zkList, "--namespace", c.ns}
	code, o, e := runCLI(args...)
	checkFailure(t, args, exitFailed, []string{"not authorized", "no digest"}, code, o, e)
	if serverOf(c.status(), "s1").Disabled {
		t.Errorf("a wrong digest disabled s1")
	}
}

func waitSession(t *testing.T, events <-chan zk.Event) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return
			}
		case <-timeout:
			t.Fatal("no ZooKeeper session within 10s")
		}
	}
}

// TestBinary builds the command and runs it as an operator would, checking
// the exit codes the process returns.
func TestAdminBinary(t *testing.T) {
	t.Parallel()
	bin := shardjobBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := newCluster(t, everySecond("orders"), "")
	c.warmUp()
	exe := func(args ...string) (int, string, string) {
		t.Helper()
		if !strings.Contains(strings.Join(args, " "), "--zk") {
			args = append(args, "--zk", strings.Join(zc.Servers(), ","), "--namespace", c.ns)
		}
		cmd := exec.CommandContext(ctx, bin, args...)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0, out.String(), errOut.String()
		case errors.As(err, &ee):
			return ee.ExitCode(), out.String(), errOut.String()
		}
		t.Fatalf("running %s: %v", bin, err)
		return 0, "", ""
	}
	if code, out, errOut := exe("jobs"); code != 0 || !strings.Contains(out, "orders") {
		t.Errorf("jobs: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := exe("trigger", "orders", "--server", "s2"); code != 0 || !strings.Contains(out, "triggered orders on s2") {
		t.Errorf("trigger: exit %d\n%s%s", code, out, errOut)
	}
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"status", "nope"}, exitUnknown},
		{[]string{"pause", "s9"}, exitUnknown},
		{[]string{"status"}, exitUsage},
		{[]string{"jobs", "--timeout", "1s", "--zk", "127.0.0.1:1"}, exitFailed},
	} {
		code, out, errOut := exe(tc.args...)
		checkFailure(t, tc.args, tc.code, nil, code, out, errOut)
	}
}
