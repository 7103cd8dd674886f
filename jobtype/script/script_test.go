package script_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobtype"
	"github.com/shardjob/shardjob/jobtype/script"
)

func sc(item int, param string) job.ShardingContext {
	return job.ShardingContext{JobName: "j", TaskID: "j@1", FireTime: time.UnixMilli(1000), ShardingTotalCount: 4,
		Item: item, ItemParameter: param, JobParameter: "jp", Kind: job.KindFire, ServerID: "s1"}
}

func newJob(t *testing.T, cfg script.Config) *script.Job {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testlog.Logger(t)
	}
	j, err := script.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// alive reports whether pid names a live (not zombie) process.
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}

// waitFile returns the contents of path once it has a complete line.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(data), "\n") {
			return strings.TrimSpace(string(data))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s not written", path)
	return ""
}

func pids(t *testing.T, s string) []int {
	var out []int
	for _, f := range strings.Fields(s) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pid %q: %v", f, err)
		}
		out = append(out, n)
	}
	return out
}

func TestContextIsTheLastArgumentAndInTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	// The program is sh running a fixed script file: no shell mode.
	prog := filepath.Join(dir, "prog.sh")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\nprintf '%s\\n' \"$#\" \"$1\" \"$2\" \"$SHARDJOB_SHARDING_CONTEXT\" > \""+out+"\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	j := newJob(t, script.Config{Command: []string{prog, "first"}})
	if err := j.Execute(context.Background(), sc(2, "Beijing")); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(waitFile(t, out), "\n")
	want := jobtype.ContextOf(sc(2, "Beijing")).JSON()
	if len(lines) != 4 || lines[0] != "2" || lines[1] != "first" || lines[2] != want || lines[3] != want {
		t.Fatalf("got %q, want 2 arguments (first, the context) and the context in the environment: %s", lines, want)
	}
	var c jobtype.Context
	if err := json.Unmarshal([]byte(lines[2]), &c); err != nil || c.ShardingItem != 2 || c.ShardingParameter != "Beijing" {
		t.Fatalf("context %q: %+v %v", lines[2], c, err)
	}
}

// An item parameter full of shell syntax reaches the command as data.
func TestItemParametersCannotInjectCommands(t *testing.T) {
	dir := t.TempDir()
	pwned := filepath.Join(dir, "pwned")
	evil := fmt.Sprintf("x'; touch %s; echo '$(touch %s)`touch %s`\"; touch %s #", pwned, pwned, pwned, pwned)
	out := filepath.Join(dir, "out")
	for _, cfg := range []script.Config{
		{Command: []string{"/bin/sh", "-c", `printf '%s\n' "$1" > "$0"`, out}},
		// Shell mode: the command text is the operator's; the context is $1.
		{Shell: true, Command: []string{`printf '%s\n' "$1" > ` + out + `; echo $SHARDJOB_SHARDING_CONTEXT > /dev/null`}},
	} {
		if err := os.Remove(out); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		j := newJob(t, cfg)
		p := sc(1, evil)
		p.JobParameter = evil
		if err := j.Execute(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		got := waitFile(t, out)
		var c jobtype.Context
		if err := json.Unmarshal([]byte(got), &c); err != nil || c.ShardingParameter != evil {
			t.Fatalf("shell %v: the command got %q, want the context with the parameter intact (%v)", cfg.Shell, got, err)
		}
		if _, err := os.Stat(pwned); err == nil {
			t.Fatalf("shell %v: an item parameter ran a command", cfg.Shell)
		}
	}
}

func TestNonZeroExitCarriesCodeAndStderrTail(t *testing.T) {
	long := strings.Repeat("x", 3*script.StderrTail)
	j := newJob(t, script.Config{Command: []string{"/bin/sh", "-c", "echo " + long + " >&2; echo the-end >&2; exit 3"}})
	err := j.Execute(context.Background(), sc(0, ""))
	var xe *script.ExitError
	if !errors.As(err, &xe) || !errors.Is(err, script.ErrFailed) {
		t.Fatalf("err %v, want an ExitError", err)
	}
	if xe.Code != 3 || !strings.HasSuffix(strings.TrimSpace(xe.Stderr), "the-end") || len(xe.Stderr) > script.StderrTail {
		t.Fatalf("code %d, stderr %d bytes ending %q", xe.Code, len(xe.Stderr), xe.Stderr[max(0, len(xe.Stderr)-20):])
	}
}

// The context's end stops the whole process tree: the command and a
// grandchild that ignores SIGTERM.
func TestCancelKillsTheProcessGroup(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "pids")
	j := newJob(t, script.Config{GracePeriod: 200 * time.Millisecond, StateDir: filepath.Join(dir, "state"),
		Command: []string{"/bin/sh", "-c", `(trap '' TERM; sleep 600) & echo $$ $! > "$0"; wait`, out}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- j.Execute(ctx, sc(0, "")) }()
	procs := pids(t, waitFile(t, out))
	for _, p := range procs {
		if !alive(p) {
			t.Fatalf("process %d not running before the cancel", p)
		}
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v, want the context's cause", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Execute did not return after the cancel")
	}
	for _, p := range procs {
		if alive(p) {
			t.Errorf("process %d outlived its item", p)
		}
	}
	if ents, err := os.ReadDir(filepath.Join(dir, "state")); err != nil || len(ents) != 0 {
		t.Errorf("state dir after the run: %v %v", ents, err)
	}
}

// A command that exits leaving a child behind: the child goes with it.
func TestBackgroundChildDiesWithItsItem(t *testing.T) {
	out := filepath.Join(t.TempDir(), "pid")
	j := newJob(t, script.Config{Command: []string{"/bin/sh", "-c", `sleep 600 & echo $! > "$0"`, out}})
	if err := j.Execute(context.Background(), sc(0, "")); err != nil {
		t.Fatal(err)
	}
	p := pids(t, waitFile(t, out))[0]
	if alive(p) {
		t.Fatalf("background process %d outlived its item", p)
	}
}

func TestOutputIsCapped(t *testing.T) {
	var buf strings.Builder
	j, err := script.New(script.Config{OutputLimit: 100, Logger: newTextLogger(&buf),
		Command: []string{"/bin/sh", "-c", "i=0; while [ $i -lt 100 ]; do echo line-$i; i=$((i+1)); done"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Execute(context.Background(), sc(0, "")); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	if !strings.Contains(got, "line-0") || strings.Contains(got, "line-99") || !strings.Contains(got, "dropped_bytes") {
		t.Fatalf("log:\n%s", got)
	}
}

func TestBadConfigsAreRefused(t *testing.T) {
	for _, c := range []struct {
		cfg  script.Config
		want string
	}{
		{script.Config{}, "command is empty"},
		{script.Config{Command: []string{" "}}, "command is empty"},
		{script.Config{Shell: true, Command: []string{"a", "b"}}, "one string"},
		{script.Config{Command: []string{"x"}, GracePeriod: -1}, "gracePeriod"},
		{script.Config{Command: []string{"x"}, Env: []string{"NOEQUALS"}}, "KEY=value"},
	} {
		_, err := script.New(c.cfg)
		if !errors.Is(err, script.ErrInvalidConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want one naming %q", c.cfg, err, c.want)
		}
	}
}

type owed struct {
	job  string
	item int
	at   time.Time
}

type debts struct{ got []owed }

func (d *debts) OweMisfire(_ context.Context, job string, item int, since time.Time) error {
	d.got = append(d.got, owed{job, item, since})
	return nil
}

// A record whose pid now names an unrelated process is left alone.
func TestReapSparesAReusedPid(t *testing.T) {
	dir := t.TempDir()
	// This test process stands for the unrelated process: the record says
	// its pid started at another time.
	rec := fmt.Sprintf(`{"job":"j","item":1,"fire":5000,"taskId":"j@5000","pid":%d,"start":1}`, os.Getpid())
	if err := os.WriteFile(filepath.Join(dir, "j.1.x.json"), []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	var d debts
	got, err := script.ReapTo(context.Background(), dir, &d, testlog.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Killed != 0 || len(d.got) != 1 || d.got[0].item != 1 || !d.got[0].at.Equal(time.UnixMilli(5000)) {
		t.Fatalf("reaped %+v, debts %+v", got, d.got)
	}
	if err := syscall.Kill(os.Getpid(), 0); err != nil {
		t.Fatal(err)
	}
}

// startTime reads field 22 of /proc/PID/stat.
func startTime(t *testing.T, pid int) uint64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	n, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A recorded group whose first process is gone but whose child lives on
// is killed, and its item owed.
func TestReapKillsALeftoverGroup(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "pid")
	cmd := exec.Command("/bin/sh", "-c", `sleep 600 & echo $! > "$0"; sleep 600`, out)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lead := cmd.Process.Pid
	rec := fmt.Sprintf(`{"job":"j","item":3,"fire":7000,"taskId":"j@7000","pid":%d,"start":%d}`, lead, startTime(t, lead))
	if err := os.WriteFile(filepath.Join(dir, "j.3.x.json"), []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	child := pids(t, waitFile(t, out))[0]
	// The first process dies alone, as the parent-death signal kills it.
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("killed shell exited cleanly")
	}
	if !alive(child) {
		t.Fatal("child died with its parent; nothing to reap")
	}
	var d debts
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got, err := script.ReapTo(ctx, dir, &d, testlog.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if alive(child) {
		t.Fatalf("orphan %d still running after Reap", child)
	}
	if len(got) != 1 || got[0].Killed < 1 || len(d.got) != 1 || d.got[0].item != 3 || !d.got[0].at.Equal(time.UnixMilli(7000)) {
		t.Fatalf("reaped %+v, debts %+v", got, d.got)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 { // the pid file
		t.Fatalf("records left: %v", ents)
	}
}

type noJobs struct{}

func (noJobs) OweMisfire(_ context.Context, name string, _ int, _ time.Time) error {
	return fmt.Errorf("%w: %q", job.ErrUnknownJob, name)
}

// A record of a job no longer defined does not stop the start.
func TestReapForgetsRecordsOfRemovedJobs(t *testing.T) {
	dir := t.TempDir()
	rec := fmt.Sprintf(`{"job":"gone","item":0,"fire":5000,"pid":%d,"start":1}`, os.Getpid())
	if err := os.WriteFile(filepath.Join(dir, "gone.0.1.json"), []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := script.ReapTo(context.Background(), dir, noJobs{}, testlog.Logger(t)); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("records left: %v", ents)
	}
}

// Reap without a scheduler to owe the items to is refused before it kills
// anything.
func TestReapNeedsAScheduler(t *testing.T) {
	if _, err := script.Reap(context.Background(), t.TempDir(), nil, testlog.Logger(t)); !errors.Is(err, script.ErrInvalidConfig) {
		t.Fatalf("Reap with a nil scheduler: %v, want ErrInvalidConfig", err)
	}
}
