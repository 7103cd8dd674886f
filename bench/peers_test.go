package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sec is the unix ms of second s of the test's timeline.
func sec(s int64) int64 { return 1_700_000_000_000 + s*1000 }

// at is the unix ns ms milliseconds after second s.
func at(s, ms int64) int64 { return (sec(s) + ms) * int64(time.Millisecond) }

func TestAnalysePhase(t *testing.T) {
	runs := []runRec{
		// j0: ticks 0..3 once each, on nodes 0 and 1.
		{node: 0, job: "j0", fire: sec(0), start: at(0, 5), kind: "fire", through: sec(0)},
		{node: 0, job: "j0", fire: sec(1), start: at(1, 7), kind: "fire", through: sec(1)},
		{node: 1, job: "j0", fire: sec(2), start: at(2, 9), kind: "fire", through: sec(2)},
		{node: 1, job: "j0", fire: sec(3), start: at(3, 11), kind: "fire", through: sec(3)},
		// j1: tick 0 run by the victim (node 2), killed in flight at 0 s
		// + 50 ms, then a make-up run at 3 s standing for ticks 0..3.
		{node: 2, job: "j1", fire: sec(0), start: at(0, 20), kind: "fire", through: sec(0)},
		{node: 1, job: "j1", fire: sec(0), start: at(3, 30), kind: "misfire", through: sec(3)},
		// j2: no fire reported (a peer): ticks from the start second;
		// tick 1 twice, tick 2 never.
		{node: 0, job: "j2", fire: -1, start: at(0, 3), kind: "fire", through: -1},
		{node: 0, job: "j2", fire: -1, start: at(1, 4), kind: "fire", through: -1},
		{node: 1, job: "j2", fire: -1, start: at(1, 400), kind: "fire", through: -1},
		{node: 1, job: "j2", fire: -1, start: at(3, 2), kind: "fire", through: -1},
	}
	kill := time.UnixMilli(sec(0) + 50)
	p := analysePhase("after", runs, 3, 3, sec(0), sec(3), crash{victim: 2, kill: kill, work: 100 * time.Millisecond})
	if p.ticks != 4 {
		t.Errorf("ticks = %d, want 4", p.ticks)
	}
	// j0: 4 once. j1: tick 0 twice (killed re-run), 1..3 once (made up).
	// j2: 0 and 3 once, 1 twice, 2 never.
	if p.once != 4+3+2 || p.twicePlus != 2 || p.twiceKilled != 1 || p.never != 1 || p.madeUp != 3 {
		t.Errorf("once %d twice+ %d killed %d never %d made up %d; want 9 2 1 1 3", p.once, p.twicePlus, p.twiceKilled, p.never, p.madeUp)
	}
	if p.runs != len(runs) {
		t.Errorf("runs = %d, want %d", p.runs, len(runs))
	}
	if want := []int{4, 5, 1}; p.perNode[0] != want[0] || p.perNode[1] != want[1] || p.perNode[2] != want[2] {
		t.Errorf("per node = %v, want %v", p.perNode, want)
	}
	// The make-up run has no fire latency.
	if len(p.lat) != len(runs)-1 {
		t.Errorf("latencies = %d, want %d", len(p.lat), len(runs)-1)
	}
}

// TestAnalysePhaseUnrecorded: a victim's runs whose records were still
// waiting to be written at the kill, made up again after it, are counted
// apart from other pairs run twice — and only within the system's record
// interval before the kill.
func TestAnalysePhaseUnrecorded(t *testing.T) {
	runs := []runRec{
		// j0 on the victim (node 2) at 0..3 s; killed at 3.5 s; node 0
		// makes up 1..4 at 5 s. Ticks 2 and 3 ran within the 2 s interval
		// before the kill; tick 1 before it.
		{node: 2, job: "j0", fire: sec(0), start: at(0, 5), kind: "fire", through: sec(0)},
		{node: 2, job: "j0", fire: sec(1), start: at(1, 5), kind: "fire", through: sec(1)},
		{node: 2, job: "j0", fire: sec(2), start: at(2, 5), kind: "fire", through: sec(2)},
		{node: 2, job: "j0", fire: sec(3), start: at(3, 5), kind: "fire", through: sec(3)},
		{node: 0, job: "j0", fire: sec(1), start: at(5, 1), kind: "misfire", through: sec(4)},
		// j1 on node 1 runs tick 2 twice, with no kill involved.
		{node: 1, job: "j1", fire: sec(2), start: at(2, 5), kind: "fire", through: sec(2)},
		{node: 1, job: "j1", fire: sec(2), start: at(2, 600), kind: "fire", through: sec(2)},
	}
	c := crash{victim: 2, kill: time.UnixMilli(sec(3) + 500), work: 100 * time.Millisecond, unrecorded: 2 * time.Second}
	p := analysePhase("before", runs, 2, 3, sec(0), sec(3), c)
	if p.twicePlus != 4 || p.twiceUnrecorded != 2 || p.twiceKilled != 0 {
		t.Errorf("twice+ %d unrecorded %d killed %d; want 4 2 0", p.twicePlus, p.twiceUnrecorded, p.twiceKilled)
	}
	c.unrecorded = 0
	if p := analysePhase("before", runs, 2, 3, sec(0), sec(3), c); p.twiceUnrecorded != 0 {
		t.Errorf("with every record written: unrecorded %d, want 0", p.twiceUnrecorded)
	}
}

func TestSpread(t *testing.T) {
	if s, r := spread([]int{10, 5, 0}, 2); s != "10/5/0" || r != 2 {
		t.Errorf("spread skipping the victim = %q %v, want 10/5/0 2", s, r)
	}
	if _, r := spread([]int{10, 0, 5}, -1); !math.IsInf(r, 1) {
		t.Errorf("spread with an idle node = %v, want inf", r)
	}
}

func TestReadRecords(t *testing.T) {
	dir := t.TempDir()
	n := &node{idx: 1, id: "n1", out: filepath.Join(dir, "n1.rec")}
	data := "S 1700000000000000000\n" +
		"R j0 0 1700000001000 1700000001005000000 fire 1700000001000\n" +
		"R j1 0 -1 1700000001007000000 fire -1\n" +
		"R j2 0 17000" // cut by the kill
	if err := os.WriteFile(n.out, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := readRecords(n)
	if err != nil {
		t.Fatal(err)
	}
	if r.started != 1700000000000000000 || len(r.runs) != 2 || r.bad != 1 {
		t.Fatalf("started %d runs %d bad %d; want 1700000000000000000 2 1", r.started, len(r.runs), r.bad)
	}
	if r.runs[0].node != 1 || r.runs[0].latencyMS() != 5 {
		t.Errorf("first run %+v: latency %v, want node 1, 5 ms", r.runs[0], r.runs[0].latencyMS())
	}
	if r.runs[1].tick() != 1700000001000 || r.runs[1].latencyMS() != 7 {
		t.Errorf("a peer's run: tick %d latency %v, want 1700000001000 and 7 ms", r.runs[1].tick(), r.runs[1].latencyMS())
	}
	if r.cost != nil {
		t.Errorf("a node that ran without -count-only has a cost: %+v", *r.cost)
	}
	counted := &node{out: filepath.Join(dir, "n2.rec")}
	if err := os.WriteFile(counted.out, []byte("S 1700000000000000000\nC 9000 450000000 1170000 81000000 60 9000\nC 12 x 1 1 0 0\nC 12 1 1 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err := readRecords(counted); err != nil || r.cost == nil || *r.cost != (nodeCost{runs: 9000, cpuNS: 450000000, mallocs: 1170000, allocs: 81000000, requests: 60, writeOps: 9000}) || r.bad != 2 {
		t.Errorf("a -count-only node's measure: %+v (cost %+v), %v; want 9000 runs, 0.45 s, 60 requests, 9,000 write ops, two bad lines (garbage, and a line without the registry's counts)", r, r.cost, err)
	}
	missing := &node{out: filepath.Join(dir, "none.rec")}
	if r, err := readRecords(missing); err != nil || len(r.runs) != 0 {
		t.Errorf("a node that wrote nothing yet: %+v, %v", r, err)
	}
}

func TestPhaseCPU(t *testing.T) {
	// Three nodes, then the server's processes: one (ZooKeeper, Redis) or
	// three etcd members, every one of them counted.
	from := []float64{1, 2, 3, 10}
	to := []float64{2, 4, 6, 15}
	if n, s := phaseCPU(from, to, 3); n != 6 || s != 5 {
		t.Errorf("one server process: nodes %v server %v, want 6 5", n, s)
	}
	from = []float64{1, 2, 3, 10, 20, 30}
	to = []float64{2, 4, 6, 15, 21, 32}
	if n, s := phaseCPU(from, to, 3); n != 6 || s != 8 {
		t.Errorf("three etcd members: nodes %v server %v, want 6 8", n, s)
	}
	// -firecost reads the server alone.
	if _, s := phaseCPU([]float64{10, 20}, []float64{15, 21}, 0); s != 6 {
		t.Errorf("server alone: %v, want 6", s)
	}
}

func TestRegistryOf(t *testing.T) {
	want := map[string]string{
		"shardjob": regZooKeeper, "shardjob-tuned": regZooKeeper, "shardjob-nolead": regZooKeeper, "shardjob-unmonitored": regZooKeeper, "shardjob-everyrun": regZooKeeper,
		"shardjob-etcd": regEtcd, "dcron-etcd": regEtcd,
		"gocron": regRedis, "dcron": regRedis,
	}
	for sys, reg := range want {
		if _, ok := systemArgs(sys, config{}); !ok {
			t.Errorf("%s is not a known system", sys)
		}
		if got := registryOf(sys); got != reg {
			t.Errorf("registryOf(%s) = %s, want %s", sys, got, reg)
		}
	}
	// Only ZooKeeper's systems get the JVM's warm-up.
	if usesZK("shardjob-etcd") || !usesZK("shardjob-tuned") {
		t.Error("usesZK: shardjob-etcd must not use ZooKeeper, shardjob-tuned must")
	}
}

func TestParseFlagsEtcd(t *testing.T) {
	c, err := parseFlags([]string{"-peers", "-peer-systems", "shardjob-etcd,dcron-etcd"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.peerSystems) != 2 || c.peerSystems[0] != "shardjob-etcd" || c.peerSystems[1] != "dcron-etcd" || c.etcdMembers != 1 {
		t.Errorf("systems %v members %d, want [shardjob-etcd dcron-etcd] 1", c.peerSystems, c.etcdMembers)
	}
	// Only etcd is started: the -fc-systems default lists ZooKeeper and
	// Redis systems, but -firecost is not chosen.
	if need := registries(c); !need[regEtcd] || need[regZooKeeper] || need[regRedis] {
		t.Errorf("servers needed for the etcd systems: %v, want etcd alone", need)
	}
	c, err = parseFlags([]string{"-firecost", "-fc-systems", "shardjob,dcron-etcd", "-failover"})
	if err != nil {
		t.Fatal(err)
	}
	if need := registries(c); !need[regEtcd] || !need[regZooKeeper] || need[regRedis] {
		t.Errorf("servers needed for shardjob, dcron-etcd and -failover: %v, want ZooKeeper and etcd", need)
	}
	if c, err = parseFlags([]string{"-dispatch"}); err != nil {
		t.Fatal(err)
	} else if need := registries(c); need[regEtcd] || need[regZooKeeper] || need[regRedis] {
		t.Errorf("servers needed for -dispatch: %v, want none", need)
	}
	if _, err := parseFlags([]string{"-peers", "-etcd-members", "0"}); err == nil || !strings.Contains(err.Error(), "-etcd-members") {
		t.Errorf("-etcd-members 0: %v, want an error naming the flag", err)
	}
	if _, err := parseFlags([]string{"-peers", "-peer-systems", "dcron-zk"}); err == nil || !strings.Contains(err.Error(), `"dcron-zk"`) {
		t.Errorf("an unknown system: %v, want an error naming it", err)
	}
}
