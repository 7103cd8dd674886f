package main

import (
	"testing"
)

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
