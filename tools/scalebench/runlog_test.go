package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestParseRunLine(t *testing.T) {
	idx := map[string]int{"s000001": 1}
	r, err := parseRunLine("R s000001 3 1000 2000 1500000000 1600000000 fire", idx)
	if err != nil {
		t.Fatal(err)
	}
	if r.job != 1 || r.item != 3 || r.fire != 1000 || r.through != 2000 || r.start != 1500000000 || r.end != 1600000000 || r.kind != "fire" {
		t.Fatalf("parsed %+v", r)
	}
	if got := r.latencyMS(); got != 500 {
		t.Fatalf("latency %v ms, want 500", got)
	}
	for _, bad := range []string{
		"R s000001 3 1000 2000 1500000000 1600000000",       // short
		"R s000009 3 1000 2000 1500000000 1600000000 fire",  // unknown job
		"R s000001 3 2000 1000 1500000000 1600000000 fire",  // through before fire
		"R s000001 3 1000 2000 1600000000 1500000000 fire",  // end before start
		"R s000001 x 1000 2000 1500000000 1600000000 fire",  // item
		"E s000001 3 1000 2000 1500000000 1600000000 fire",  // not a run
		"R s000001 -1 1000 2000 1500000000 1600000000 fire", // negative item
	} {
		if _, err := parseRunLine(bad, idx); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestReadRunsKeepsAPartialLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "i.runs")
	idx := map[string]int{"a": 0}
	if err := os.WriteFile(p, []byte("R a 0 1000 1000 1 2 fire\ngarbage\nR a 1 1000 1000 1 2 fi"), 0o644); err != nil {
		t.Fatal(err)
	}
	runs, off, bad, err := readRuns(p, 0, 4, idx)
	if err != nil || len(runs) != 1 || bad != 1 || runs[0].inst != 4 {
		t.Fatalf("runs %+v, bad %d, err %v", runs, bad, err)
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("re\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	runs, _, bad, err = readRuns(p, off, 4, idx)
	if err != nil || len(runs) != 1 || bad != 0 || runs[0].item != 1 {
		t.Fatalf("after the rest of the line: runs %+v, bad %d, err %v", runs, bad, err)
	}
	if runs, _, _, err := readRuns(filepath.Join(t.TempDir(), "none"), 0, 0, idx); err != nil || runs != nil {
		t.Fatalf("a log not written yet: %v, %v", runs, err)
	}
}

func TestFindOverlaps(t *testing.T) {
	runs := []runRec{
		{inst: 0, job: 1, item: 0, start: 100, end: 200},
		{inst: 1, job: 1, item: 0, start: 200, end: 300}, // touches: not at once
		{inst: 1, job: 1, item: 1, start: 100, end: 500},
		{inst: 0, job: 1, item: 1, start: 150, end: 160}, // inside the long one
		{inst: 2, job: 1, item: 1, start: 400, end: 600}, // still inside it
		{inst: 0, job: 2, item: 1, start: 150, end: 160}, // another job
	}
	got := findOverlaps(runs)
	if len(got) != 2 {
		t.Fatalf("%d overlaps, want 2: %+v", len(got), got)
	}
	for _, o := range got {
		if o.key != (itemKey{1, 1}) || o.a.start != 100 {
			t.Errorf("overlap %+v, want of job 1 item 1 against the run from 100", o)
		}
	}
	if n := len(findOverlaps(runs[:2])); n != 0 {
		t.Errorf("runs back to back: %d overlaps", n)
	}
}

func TestCheckCoverage(t *testing.T) {
	fast := map[int]int{0: 2} // job 0, items 0 and 1
	name := func(j int) string { return fmt.Sprintf("j%d", j) }
	var runs []runRec
	for s := int64(10); s <= 20; s++ {
		runs = append(runs, runRec{job: 0, item: 0, fire: s * 1000, through: s * 1000, kind: "fire"})
		if s < 13 || s > 16 {
			runs = append(runs, runRec{job: 0, item: 1, fire: s * 1000, through: s * 1000, kind: "fire"})
		}
	}
	// Item 1 misses 13..16; a make-up run stands for 14 and 15 only.
	runs = append(runs, runRec{job: 0, item: 1, fire: 14000, through: 15000, kind: "misfire"})
	// Item 0's 18 ran twice: a failover run beside the fire.
	runs = append(runs, runRec{job: 0, item: 0, fire: 18000, through: 18000, kind: "failover"})
	// A job not in fast is not checked.
	runs = append(runs, runRec{job: 5, item: 0, fire: 1000, through: 1000})
	c := checkCoverage(runs, fast, 10000, 20000, name, noKill)
	if c.fires != 22 || c.lost != 2 || c.twice != 1 {
		t.Fatalf("coverage %+v, want 22 fires, 2 lost, 1 twice", c)
	}
	if c.lostExamples[0] != "j0/1@13" || c.lostExamples[1] != "j0/1@16" {
		t.Errorf("lost examples %v", c.lostExamples)
	}
	if c.twiceKinds["failover+fire"] != 1 {
		t.Errorf("twice kinds %v", c.twiceKinds)
	}
	// A window starting between seconds checks from the next whole one.
	if c := checkCoverage(runs, fast, 12500, 13000, name, noKill); c.fires != 2 || c.lost != 1 {
		t.Errorf("window 12.5–13 s: %+v", c)
	}
}

// TestCheckCoverageAcrossAKill: a fire the victim ran just before the
// kill and a survivor ran again after it is a completion in flight at the
// kill; a fire run twice by survivors is not.
func TestCheckCoverageAcrossAKill(t *testing.T) {
	fast := map[int]int{0: 1}
	name := func(j int) string { return fmt.Sprintf("j%d", j) }
	const kill = 12_500 * int64(time.Millisecond)
	ms := func(s float64) int64 { return int64(s * float64(time.Millisecond)) }
	runs := []runRec{
		{inst: 2, job: 0, item: 0, fire: 10000, through: 12000, start: ms(12_490), end: ms(12_496), kind: "misfire"}, // the victim's, 4 ms before the kill
		{inst: 0, job: 0, item: 0, fire: 12000, through: 14000, start: ms(24_000), end: ms(24_001), kind: "misfire"}, // 12 again, after it
		{inst: 1, job: 0, item: 0, fire: 14000, through: 14000, start: ms(25_000), end: ms(25_001), kind: "fire"},    // 14 again, by a survivor
	}
	c := checkCoverage(runs, fast, 10000, 14000, name, killMark{inst: 2, at: kill})
	if c.twice != 2 || c.killed != 1 || c.killedMS != 4 {
		t.Fatalf("coverage %+v, want 2 twice, 1 across the kill 4 ms before it", c)
	}
}

func TestFirstRuns(t *testing.T) {
	fast := map[int]int{0: 2}
	runs := []runRec{
		{inst: 0, job: 0, item: 0, start: 50},
		{inst: 1, job: 0, item: 0, start: 150},
		{inst: 2, job: 0, item: 0, start: 120},
		{inst: 1, job: 0, item: 1, start: 90},  // before since
		{inst: 0, job: 0, item: 1, start: 300}, // the skipped instance
		{inst: 1, job: 3, item: 0, start: 300}, // not a fast job
	}
	got := firstRuns(runs, fast, 100, 0)
	if len(got) != 1 || got[itemKey{0, 0}] != 120 {
		t.Fatalf("first runs %v, want item 0 at 120 only", got)
	}
}
