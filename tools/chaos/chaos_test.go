package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/testing/pgtest"
	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/tools/chaos/eventlog"
)

// TestChaosShort runs the whole harness on each registry — a three-member
// ZooKeeper ensemble or etcd cluster, or one PostgreSQL server, three
// instance processes, every fault
// kind of the registry at least once over about a minute — and fails if
// committed executions overlapped, fires were lost or a fire ran twice with
// no crash to explain it.
//
// SHARDJOB_CHAOS_SEED replays a schedule; SHARDJOB_CHAOS_DIR keeps the run
// directories (DIR/zookeeper, DIR/etcd, DIR/postgres: event log, instance and registry
// logs) for inspection. -run TestChaosShort/etcd runs one registry only.
func TestChaosShort(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos harness runs for one to two minutes per registry")
	}
	for _, registry := range registries {
		t.Run(registry, func(t *testing.T) { chaosShort(t, registry) })
	}
}

func chaosShort(t *testing.T, registry string) {
	cfg := DefaultConfig()
	cfg.Registry = registry
	cfg.Duration = 30 * time.Second // the first round of every fault always completes; later rounds are the long runs' work
	cfg.FailEvery = 7               // a retrying job: every 7th run of an instance fails at first, and is retried
	cfg.Backfill = true             // and a backfill beside the live schedule
	if s := os.Getenv("SHARDJOB_CHAOS_SEED"); s != "" {
		seed, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("SHARDJOB_CHAOS_SEED: %v", err)
		}
		cfg.Seed = seed
	}
	keep := os.Getenv("SHARDJOB_CHAOS_DIR")
	cfg.Dir = t.TempDir()
	if keep != "" {
		cfg.Dir = filepath.Join(keep, registry)
	}
	cfg.Out = testlog.Writer{T: t}

	rep, err := Run(t.Context(), cfg)
	if errors.Is(err, zktest.ErrNotInstalled) || errors.Is(err, pgtest.ErrNotInstalled) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	rep.Details(&buf)
	t.Log("\n" + buf.String())
	t.Log(rep.Summary())

	if got := rep.Registry(); got != registry {
		t.Errorf("the event log says the run was on %s, want %s", got, registry)
	}
	injected := cfg.Faults
	if injected == nil {
		injected = faultsFor(registry)
	}
	for _, f := range injected {
		if f == faultPartition && !rep.Config.Partition {
			t.Logf("fault %s skipped: no network namespace here", f)
			continue
		}
		if rep.FaultCounts[f] == 0 {
			t.Errorf("fault %s was not injected", f)
		}
	}
	assertNothingLeft(t, filepath.Join(cfg.Dir, "events.jsonl"))
	if len(rep.Overlaps)+len(rep.SelfOverlaps) > 0 {
		t.Errorf("I1 violated: %d overlapping committed executions (seed %d)", len(rep.Overlaps)+len(rep.SelfOverlaps), cfg.Seed)
	}
	if len(rep.Lost) > 0 {
		t.Errorf("I2 violated: %d lost fires (seed %d)", len(rep.Lost), cfg.Seed)
	}
	// Exactly once when nothing crashes: a pair run twice needs a crash of
	// the earlier run's instance to explain it.
	if n := len(rep.UnexplainedDuplicates); n > 0 {
		t.Errorf("%d (fire, item) pairs ran twice with no crash of the earlier run's instance to explain them (seed %d); first: %+v", n, cfg.Seed, rep.UnexplainedDuplicates[0])
	}
	// The backfill ran each fire of its range once on every item.
	if rep.Backfill == nil || !rep.Backfill.Through || len(rep.BackfillLost) > 0 || len(rep.BackfillUnexplained) > 0 {
		t.Errorf("the backfill: %+v, %d lost, %d unexplained duplicates (seed %d)", rep.Backfill, len(rep.BackfillLost), len(rep.BackfillUnexplained), cfg.Seed)
	}
	// The retrying job ran: runs failed at first and were tried again.
	if rep.Failed == 0 || rep.Retried == 0 {
		t.Errorf("the retrying job: %d runs failed, %d retries checked; want some of each", rep.Failed, rep.Retried)
	}
	if t.Failed() && os.Getenv("SHARDJOB_CHAOS_DIR") == "" {
		t.Log("set SHARDJOB_CHAOS_DIR to keep the event log and the instances' logs; SHARDJOB_CHAOS_SEED to replay the schedule")
	}
}

// assertNothingLeft checks that every instance process the run started was
// reaped and that the run's network namespace is gone.
func assertNothingLeft(t *testing.T, logPath string) {
	t.Helper()
	events, _, err := eventlog.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	started, reaped := map[int]string{}, map[int]bool{}
	for _, e := range events {
		switch e.Ev {
		case eventlog.ProcStart:
			started[e.PID] = e.Inst
		case eventlog.Exit:
			reaped[e.PID] = true
		}
	}
	for pid, inst := range started {
		if !reaped[pid] {
			t.Errorf("instance %s pid %d was not reaped", inst, pid)
		}
	}
	if out, err := exec.Command("ip", "netns", "list").Output(); err == nil {
		if name := netnsPrefix + strconv.Itoa(os.Getpid()); strings.Contains(string(out), name) {
			t.Errorf("network namespace %s left behind", name)
		}
	}
}

func TestForwarder(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	f, addrs, err := startForwarder("127.0.0.1", []string{echo.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, 5)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "ping\n" {
		t.Fatalf("read %q, %v", got, err)
	}
	// Closing the forwarder drops relayed connections.
	f.close()
	if _, err := c.Read(got); err == nil {
		t.Error("connection still open after the forwarder closed")
	}
}

// TestNetnsPartition checks the partition machinery: a process inside the
// namespace reaches a host listener through the veth pair, not while the
// link is down, and again once healed; nothing is left afterwards.
func TestNetnsPartition(t *testing.T) {
	n, err := setupNetns(t.Context())
	if err != nil {
		t.Skipf("no network namespace here: %v", err)
	}
	defer n.teardown()
	ln, err := net.Listen("tcp", net.JoinHostPort(n.HostIP, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	reach := func() bool {
		// bash's /dev/tcp connects from inside the namespace.
		name, args := n.command("timeout", "2", "bash", "-c", "exec 3<>/dev/tcp/"+n.HostIP+"/"+port)
		return exec.Command(name, args...).Run() == nil
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not found")
	}
	if !reach() {
		t.Fatal("host listener unreachable from the namespace")
	}
	if err := n.partition(t.Context()); err != nil {
		t.Fatal(err)
	}
	if reach() {
		t.Error("host listener reachable during the partition")
	}
	if err := n.heal(t.Context()); err != nil {
		t.Fatal(err)
	}
	ok := false
	for i := 0; i < 20 && !ok; i++ {
		ok = reach()
		if !ok {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !ok {
		t.Error("host listener unreachable after healing")
	}
	n.teardown()
	out, _ := exec.Command("ip", "netns", "list").Output()
	if strings.Contains(string(out), n.Name) {
		t.Errorf("namespace %s left behind", n.Name)
	}
	if exec.Command("ip", "link", "show", n.HostIf).Run() == nil {
		t.Errorf("link %s left behind", n.HostIf)
	}
}
