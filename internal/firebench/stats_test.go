package main

import (
	"math"
	"testing"
)

func TestPercentile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	for _, c := range []struct {
		p    float64
		want float64
	}{{50, 5}, {99, 10}, {100, 10}, {0, 1}, {10, 1}, {11, 2}} {
		if got := percentile(xs, c.p); got != c.want {
			t.Errorf("percentile(p=%v) = %v, want %v", c.p, got, c.want)
		}
	}
	if xs[0] != 5 {
		t.Errorf("percentile sorted its input: %v", xs)
	}
	if !math.IsNaN(percentile(nil, 50)) || !math.IsNaN(maxOf(nil)) {
		t.Error("empty sample: want NaN")
	}
}

func TestParseExecLine(t *testing.T) {
	e, err := parseExecLine("E j7 3 1700000000000 1700000000002500000 failover")
	if err != nil {
		t.Fatal(err)
	}
	want := execRec{job: "j7", item: 3, fire: 1700000000000, entered: 1700000000002500000, kind: "failover", through: 1700000000000}
	if e != want {
		t.Fatalf("got %+v, want %+v", e, want)
	}
	// With the run's Through: a make-up run standing for three fires.
	e, err = parseExecLine("E j7 3 1700000000000 1700000000002500000 misfire 1700000002000")
	if err != nil || e.through != 1700000002000 {
		t.Fatalf("got %+v, %v; want through 1700000002000", e, err)
	}
	if done := completeFires([]execRec{e}, 1); !done[fireKey("j7", 1700000001000)] || !done[fireKey("j7", 1700000002000)] || done[fireKey("j7", 1700000003000)] {
		t.Errorf("a run through 1700000002000 completes %v", done)
	}
	if got := e.latencyMS(); got != 2.5 {
		t.Errorf("latency %v ms, want 2.5", got)
	}
	for _, bad := range []string{"", "READY", "E j 1 2 3", "E j x 1 2 fire", "E j 1 5 3 fire 4", "X j 1 2 3 fire"} {
		if _, err := parseExecLine(bad); err == nil {
			t.Errorf("parseExecLine(%q): no error", bad)
		}
	}
}

func TestParseMntr(t *testing.T) {
	m := parseMntr("zk_version\t3.8.0-1, built on\nzk_packets_received\t1234\nzk_num_alive_connections\t2\n")
	if n, err := mntrInt(m, "zk_packets_received"); err != nil || n != 1234 {
		t.Errorf("zk_packets_received = %v, %v", n, err)
	}
	if _, err := mntrInt(m, "zk_missing"); err == nil {
		t.Error("missing key: no error")
	}
}

func TestParseWchs(t *testing.T) {
	c, p, total, err := parseWchs("3 connections watching 12 paths\nTotal watches:14\n")
	if err != nil || c != 3 || p != 12 || total != 14 {
		t.Errorf("got %d %d %d %v", c, p, total, err)
	}
	if _, _, _, err := parseWchs("nonsense"); err == nil {
		t.Error("nonsense: no error")
	}
}

func TestParseProcStatCPU(t *testing.T) {
	// Fields 14 and 15 (utime, stime) are 120 and 30; the name has a space
	// and a parenthesis.
	stat := "4242 (my (odd) prog) S 1 4242 4242 0 -1 4194560 100 0 0 0 120 30 0 0 20 0 5 0 100 1000 50"
	got, err := parseProcStatCPU(stat)
	if err != nil || got != 150 {
		t.Errorf("got %d, %v; want 150", got, err)
	}
	if _, err := parseProcStatCPU("garbage"); err == nil {
		t.Error("garbage: no error")
	}
}

func TestSettled(t *testing.T) {
	run := func(fire int64, owners ...int) []execRec {
		var es []execRec
		for item, inst := range owners {
			es = append(es, execRec{inst: inst, job: "j0", item: item, fire: fire, kind: "fire"})
		}
		return es
	}
	es := append(run(1000, 0, 0, 0, 0), run(2000, 0, 0, 1, 1)...)
	if settled(es, 4, 2) != nil {
		t.Error("settled after a changed assignment")
	}
	es = append(es, run(3000, 0, 0, 1, 1)...)
	got := settled(es, 4, 2)
	if got == nil || got[2] != 1 || got[0] != 0 {
		t.Errorf("settled = %v", got)
	}
	if settled(append(run(1000, 0, 0), run(2000, 0, 0)...), 2, 2) != nil {
		t.Error("settled with an instance holding nothing")
	}
}
