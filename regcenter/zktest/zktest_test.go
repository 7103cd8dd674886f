package zktest

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// connect opens a go-zookeeper session to servers and waits for it.
func connect(t *testing.T, servers []string) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect(servers, 2*time.Second, zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				// Keep draining so the library never blocks on the channel.
				go func() {
					for range events {
					}
				}()
				return conn
			}
		case <-timeout:
			t.Fatalf("no session with %v within 20s", servers)
		}
	}
}

func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// pids returns the pids of the running members.
func pids(c *Cluster) []int {
	var r []int
	for _, m := range c.running() {
		r = append(r, c.proc(m).PID)
	}
	return r
}

func assertGone(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("pid %d still exists after Close (kill 0: %v)", pid, err)
		}
	}
}

type countingHandler struct{ lines atomic.Int64 }

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Level == slog.LevelDebug && r.Message == "zookeeper" {
		h.lines.Add(1)
	}
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }

func TestStandalone(t *testing.T) {
	h := &countingHandler{}
	began := time.Now()
	c := Start(t, func(o *Options) { o.Logger = slog.New(h) })
	t.Logf("standalone serving after %v", time.Since(began).Round(time.Millisecond))
	ctx := testContext(t, time.Minute)

	if c.Size() != 1 || len(c.Servers()) != 1 || c.ConnectString() != c.Servers()[0] {
		t.Fatalf("Size %d, Servers %v, ConnectString %q", c.Size(), c.Servers(), c.ConnectString())
	}
	if !strings.HasPrefix(c.ConnectString(), "127.0.0.1:") {
		t.Errorf("ConnectString %q is not on loopback", c.ConnectString())
	}
	if i, err := c.Leader(ctx); err != nil || i != 0 {
		t.Fatalf("Leader = %d, %v; want 0", i, err)
	}
	if mode, _, err := serverMode(ctx, c.Servers()[0]); err != nil || mode != "standalone" {
		t.Fatalf("mode %q, %v; want standalone", mode, err)
	}
	if h.lines.Load() == 0 {
		t.Error("Logger got no server output")
	}

	conn := connect(t, c.Servers())
	if _, err := conn.Create("/zktest", []byte("hello"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	got, _, err := conn.Get("/zktest")
	if err != nil || string(got) != "hello" {
		t.Fatalf("Get = %q, %v", got, err)
	}

	// A restarted member keeps its port and its data.
	addr := c.Servers()[0]
	began = time.Now()
	if err := c.Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	t.Logf("standalone restarted in %v", time.Since(began).Round(time.Millisecond))
	if c.Servers()[0] != addr {
		t.Errorf("address changed from %s to %s", addr, c.Servers()[0])
	}
	got, _, err = connect(t, c.Servers()).Get("/zktest")
	if err != nil || string(got) != "hello" {
		t.Fatalf("after restart Get = %q, %v", got, err)
	}

	running := pids(c)
	dir := c.dir
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	assertGone(t, running)
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temp dir %s not removed: %v", dir, err)
	}
	if err := c.StartMember(ctx, 0); err == nil {
		t.Error("StartMember after Close succeeded")
	}
}

func TestEnsemble(t *testing.T) {
	began := time.Now()
	c := Start(t, WithSize(3))
	t.Logf("ensemble of 3 serving after %v", time.Since(began).Round(time.Millisecond))
	ctx := testContext(t, 3*time.Minute)

	if c.Size() != 3 || len(strings.Split(c.ConnectString(), ",")) != 3 {
		t.Fatalf("Size %d, ConnectString %q", c.Size(), c.ConnectString())
	}
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	modes := map[string]int{}
	for _, s := range c.Servers() {
		mode, _, err := serverMode(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		modes[mode]++
	}
	if modes["leader"] != 1 || modes["follower"] != 2 {
		t.Fatalf("modes %v; want one leader, two followers", modes)
	}

	conn := connect(t, c.Servers())
	if _, err := conn.Create("/durable", []byte("v1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	// Crash the leader: the other two still form a quorum and elect one.
	began = time.Now()
	if err := c.Kill(leader); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitServing(ctx); err != nil {
		t.Fatal(err)
	}
	next, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("leader %d killed; member %d leads after %v", leader, next, time.Since(began).Round(time.Millisecond))
	if next == leader {
		t.Fatalf("killed member %d is still the leader", leader)
	}
	survivors := connect(t, []string{c.Servers()[(leader+1)%3], c.Servers()[(leader+2)%3]})
	if got, _, err := survivors.Get("/durable"); err != nil || string(got) != "v1" {
		t.Fatalf("after leader kill Get = %q, %v", got, err)
	}
	if _, err := survivors.Set("/durable", []byte("v2"), -1); err != nil {
		t.Fatal(err)
	}

	// The crashed member rejoins as a follower and catches up.
	began = time.Now()
	if err := c.StartMember(ctx, leader); err != nil {
		t.Fatal(err)
	}
	t.Logf("member %d rejoined after %v", leader, time.Since(began).Round(time.Millisecond))
	if mode, _, err := serverMode(ctx, c.Servers()[leader]); err != nil || mode != "follower" {
		t.Fatalf("rejoined member mode %q, %v; want follower", mode, err)
	}
	if err := c.StartMember(ctx, leader); err == nil {
		t.Error("StartMember of a running member succeeded")
	}

	// Losing the quorum is reported at once rather than waited out.
	if err := c.Stop((next + 1) % 3); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop((next + 2) % 3); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitServing(ctx); err == nil || !strings.Contains(err.Error(), "only 1 of 3") {
		t.Fatalf("WaitServing without quorum = %v", err)
	}

	// A whole-ensemble restart keeps the data.
	began = time.Now()
	if err := c.RestartAll(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("RestartAll serving after %v", time.Since(began).Round(time.Millisecond))
	if _, err := c.Leader(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _, err := connect(t, c.Servers()).Get("/durable"); err != nil || string(got) != "v2" {
		t.Fatalf("after RestartAll Get = %q, %v", got, err)
	}

	running := pids(c)
	if len(running) != 3 {
		t.Fatalf("%d members running after RestartAll", len(running))
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, running)
}

func TestNotInstalled(t *testing.T) {
	t.Setenv("ZOOKEEPER_HOME", filepath.Join(t.TempDir(), "no-such-zookeeper"))
	c, err := StartCluster(t.Context(), Options{})
	if err == nil {
		c.Close()
		t.Fatal("StartCluster succeeded without ZooKeeper")
	}
	if !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("error %v does not wrap ErrNotInstalled", err)
	}
	for _, want := range []string{"apt-get install zookeeper", "ZOOKEEPER_HOME"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestHomeClasspath(t *testing.T) {
	// An Apache release: every jar in lib/.
	release := t.TempDir()
	touch(t, filepath.Join(release, "lib", "zookeeper-3.9.2.jar"))
	touch(t, filepath.Join(release, "lib", "logback-classic-1.2.13.jar"))
	touch(t, filepath.Join(release, "conf", "zoo_sample.cfg"))
	cp, err := homeClasspath(release)
	if err != nil {
		t.Fatal(err)
	}
	if len(cp) != 2 || filepath.Base(cp[0]) != "logback-classic-1.2.13.jar" || filepath.Base(cp[1]) != "zookeeper-3.9.2.jar" {
		t.Errorf("release classpath %v", cp)
	}

	// A Debian-style share dir: jars in ../java, plus the log4j binding.
	share := t.TempDir()
	touch(t, filepath.Join(share, "zookeeper", "bin", "zkServer.sh"))
	touch(t, filepath.Join(share, "java", "zookeeper.jar"))
	touch(t, filepath.Join(share, "java", "slf4j-log4j12.jar"))
	cp, err = homeClasspath(filepath.Join(share, "zookeeper"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(share, "java", "zookeeper.jar"), filepath.Join(share, "java", "slf4j-log4j12.jar")}
	if strings.Join(cp, ":") != strings.Join(want, ":") {
		t.Errorf("debian classpath %v, want %v", cp, want)
	}

	// A directory without ZooKeeper.
	empty := t.TempDir()
	touch(t, filepath.Join(empty, "lib", "other.jar"))
	if _, err := homeClasspath(empty); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("empty home: %v", err)
	}
}

func TestStartFailureShowsLog(t *testing.T) {
	dir := t.TempDir()
	ctx := testContext(t, time.Minute)
	c, err := StartCluster(ctx, Options{Dir: dir, JavaOpts: []string{"-XX:+NoSuchOptionForZktest"}})
	if err == nil {
		c.Close()
		t.Fatal("StartCluster succeeded with a bad JVM flag")
	}
	if errors.Is(err, ErrNotInstalled) {
		t.Fatal(err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "exited during startup") || !strings.Contains(msg, "NoSuchOptionForZktest") {
		t.Errorf("error lacks the exit and the log tail:\n%s", msg)
	}
	if _, err := os.Stat(filepath.Join(dir, "zk1", "server.log")); err != nil {
		t.Errorf("log of a given Dir is gone: %v", err)
	}
}

func TestOptionsValidation(t *testing.T) {
	if _, err := StartCluster(t.Context(), Options{Size: -1}); err == nil {
		t.Error("Size -1 accepted")
	}
	if _, err := StartCluster(t.Context(), Options{TickTime: time.Microsecond}); err == nil {
		t.Error("TickTime 1µs accepted")
	}
}

func TestParseMode(t *testing.T) {
	srvr := "Zookeeper version: 3.8.0\nLatency min/avg/max: 0/0.0/0\nMode: follower\nNode count: 5\n"
	if got := parseMode(srvr); got != "follower" {
		t.Errorf("parseMode = %q", got)
	}
	if got := parseMode("This ZooKeeper instance is not currently serving requests\n"); got != "" {
		t.Errorf("parseMode(not serving) = %q", got)
	}
}

func TestLineLogger(t *testing.T) {
	h := &countingHandler{}
	w := &lineLogger{log: slog.New(h)}
	for _, s := range []string{"one\ntw", "o\n", "three"} {
		if _, err := w.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if n := h.lines.Load(); n != 2 {
		t.Errorf("%d lines logged, want 2 (the third has no newline yet)", n)
	}
	if string(w.buf) != "three" {
		t.Errorf("pending %q", w.buf)
	}
}
