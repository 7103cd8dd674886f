package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/tools/chaos/eventlog"
)

// synth builds a synthetic log. Times are milliseconds after t0, a whole
// second, so fire n is at n*1000.
type synth struct {
	t0     int64 // Unix ns
	events []eventlog.Event
	seq    int
}

var synthBase = time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC).UnixNano()

func newSynth(items int, warmup, cooldown time.Duration) *synth {
	s := &synth{t0: synthBase}
	s.add(0, eventlog.Event{Ev: eventlog.Config, Cfg: &eventlog.RunConfig{
		Seed: 42, Instances: 2, InstanceIDs: []string{"i1", "i2"}, Items: items, PeriodMS: 1000,
		WarmupMS: warmup.Milliseconds(), CooldownMS: cooldown.Milliseconds(),
	}})
	s.add(0, eventlog.Event{Ev: eventlog.MeasureStart})
	return s
}

func (s *synth) ns(ms int64) int64 { return s.t0 + ms*int64(time.Millisecond) }

func (s *synth) add(ms int64, e eventlog.Event) {
	e.T = s.ns(ms)
	s.events = append(s.events, e)
}

func pidOf(inst string) int { return map[string]int{"i1": 101, "i2": 102, "i3": 103}[inst] }

// exec adds an execution: its begin line and, by state, an end line, an
// abort line, or nothing (the process died).
func (s *synth) exec(inst string, item int, fireSec int64, kind string, beginMS, stopMS int64, state string) {
	s.seq++
	run := fmt.Sprintf("%s.%d", inst, s.seq)
	base := eventlog.Event{Inst: inst, PID: pidOf(inst), Run: run, Item: eventlog.Item(item), Fire: s.ns(fireSec*1000) / int64(time.Millisecond), Kind: kind}
	e := base
	e.Ev = eventlog.Begin
	s.add(beginMS, e)
	switch state {
	case stateCommitted:
		e = base
		e.Ev = eventlog.End
		s.add(stopMS, e)
	case stateAborted:
		e = base
		e.Ev, e.Err = eventlog.Abort, "still owner: session lost"
		s.add(stopMS, e)
	case stateReplaced:
		e = base
		e.Ev, e.Err = eventlog.Replaced, "context: job: run replaced by a later fire"
		s.add(stopMS, e)
	case stateFailed:
		e = base
		e.Ev, e.Err = eventlog.Failed, "failed as asked"
		s.add(stopMS, e)
	}
}

// attempt adds an execution as exec does, logged as its fire's try n.
func (s *synth) attempt(n int, inst string, item int, fireSec int64, beginMS, stopMS int64, state string) {
	at := len(s.events)
	s.exec(inst, item, fireSec, "fire", beginMS, stopMS, state)
	s.events[at].Attempt = n
}

// kill9 adds a kill -9 of inst: the fault's begin, the process's exit
// and the fault's end (the instance started again).
func (s *synth) kill9(inst string, beginMS, exitMS, endMS int64) {
	s.add(beginMS, eventlog.Event{Ev: eventlog.FaultBegin, Fault: faultKill9, Detail: inst, Inst: inst})
	s.add(exitMS, eventlog.Event{Ev: eventlog.Exit, Inst: inst, PID: pidOf(inst), Detail: "signal: killed"})
	s.add(endMS, eventlog.Event{Ev: eventlog.FaultEnd, Fault: faultKill9, Detail: inst, Inst: inst})
}

func (s *synth) stop(ms int64) { s.add(ms, eventlog.Event{Ev: eventlog.MeasureStop}) }

func (s *synth) analyse(t *testing.T) *Report {
	t.Helper()
	r, err := Analyse(s.events, AnalyseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// fires adds a committed fire execution on inst for every fire in [from, to]
// of item, each lasting 500ms.
func (s *synth) fires(inst string, item int, from, to int64) {
	for f := from; f <= to; f++ {
		s.exec(inst, item, f, "fire", f*1000+10, f*1000+510, stateCommitted)
	}
}

func TestOverlapFound(t *testing.T) {
	s := newSynth(1, 0, 0)
	s.exec("i1", 0, 1, "fire", 1000, 2500, stateCommitted)
	s.exec("i2", 0, 2, "failover", 2400, 3000, stateCommitted)
	s.stop(3000)
	r := s.analyse(t)
	if len(r.Overlaps) != 1 {
		t.Fatalf("overlaps = %d, want 1", len(r.Overlaps))
	}
	if got := r.Overlaps[0].duration(); got != 100*time.Millisecond {
		t.Errorf("overlap lasts %v, want 100ms", got)
	}
	if r.OK() {
		t.Error("OK() with an overlap")
	}
	var buf bytes.Buffer
	r.Details(&buf)
	if !strings.Contains(buf.String(), "OVERLAP: item 0") {
		t.Errorf("details do not show the overlap:\n%s", buf.String())
	}
}

func TestNoOverlap(t *testing.T) {
	s := newSynth(2, 0, 0)
	// Back to back on two instances: the second begins when the first ends.
	s.exec("i1", 0, 1, "fire", 1000, 2500, stateCommitted)
	s.exec("i2", 0, 2, "misfire", 2500, 4000, stateCommitted)
	// Same time, different items.
	s.exec("i1", 1, 1, "fire", 1000, 2500, stateCommitted)
	s.exec("i2", 1, 3, "fire", 3000, 4000, stateCommitted)
	s.stop(4000)
	r := s.analyse(t)
	if len(r.Overlaps)+len(r.SelfOverlaps)+len(r.StaleOverlaps) != 0 {
		t.Fatalf("overlaps %v, self %v, stale %v; want none", r.Overlaps, r.SelfOverlaps, r.StaleOverlaps)
	}
}

func TestSameProcessOverlapCounts(t *testing.T) {
	s := newSynth(1, 0, 0)
	s.exec("i1", 0, 1, "fire", 1000, 2500, stateCommitted)
	s.exec("i1", 0, 2, "fire", 2000, 3000, stateCommitted)
	s.stop(3000)
	r := s.analyse(t)
	if len(r.SelfOverlaps) != 1 || len(r.Overlaps) != 0 || r.OK() {
		t.Fatalf("self %d, overlaps %d, OK %v; want 1, 0, false", len(r.SelfOverlaps), len(r.Overlaps), r.OK())
	}
	if !strings.Contains(r.Summary(), " overlaps=1 ") {
		t.Errorf("summary does not count it: %s", r.Summary())
	}
}

func TestAbortedIsNotAnOverlap(t *testing.T) {
	s := newSynth(1, 0, 0)
	// i1 lost its session while working and aborted after i2 took over.
	s.exec("i1", 0, 1, "fire", 1000, 3000, stateAborted)
	s.exec("i2", 0, 1, "failover", 2000, 3500, stateCommitted)
	s.stop(4000)
	r := s.analyse(t)
	if len(r.Overlaps) != 0 {
		t.Fatalf("overlaps = %d, want 0", len(r.Overlaps))
	}
	if len(r.StaleOverlaps) != 1 {
		t.Fatalf("stale overlaps = %d, want 1", len(r.StaleOverlaps))
	}
	if r.Aborted != 1 || r.Committed != 1 {
		t.Errorf("aborted %d committed %d, want 1 1", r.Aborted, r.Committed)
	}
}

func TestFrozenAbortIsNotStale(t *testing.T) {
	s := newSynth(1, 0, 0)
	s.exec("i1", 0, 1, "fire", 1000, 8000, stateAborted)
	s.add(1200, eventlog.Event{Ev: eventlog.Signal, Inst: "i1", PID: pidOf("i1"), Detail: "SIGSTOP"})
	s.add(7900, eventlog.Event{Ev: eventlog.Signal, Inst: "i1", PID: pidOf("i1"), Detail: "SIGCONT"})
	s.exec("i2", 0, 1, "failover", 5500, 7000, stateCommitted)
	s.stop(9000)
	r := s.analyse(t)
	if len(r.StaleOverlaps) != 0 || len(r.Overlaps) != 0 {
		t.Fatalf("stale %d overlaps %d, want 0 0", len(r.StaleOverlaps), len(r.Overlaps))
	}
}

func TestFrozenCommit(t *testing.T) {
	s := newSynth(1, 0, 0)
	s.events[0].Cfg.SessionTimeoutMS = 4000
	s.exec("i1", 0, 1, "fire", 1000, 8000, stateCommitted)
	s.add(1200, eventlog.Event{Ev: eventlog.Signal, Inst: "i1", PID: pidOf("i1"), Detail: "SIGSTOP"})
	// The SIGCONT is logged after the end line.
	s.add(8001, eventlog.Event{Ev: eventlog.Signal, Inst: "i1", PID: pidOf("i1"), Detail: "SIGCONT"})
	// After the freeze, and then with a short freeze.
	s.exec("i1", 0, 9, "fire", 9000, 9500, stateCommitted)
	s.add(9600, eventlog.Event{Ev: eventlog.Signal, Inst: "i1", PID: pidOf("i1"), Detail: "SIGSTOP"})
	s.add(9800, eventlog.Event{Ev: eventlog.Signal, Inst: "i1", PID: pidOf("i1"), Detail: "SIGCONT"})
	s.exec("i1", 0, 9, "fire", 9550, 9900, stateCommitted)
	s.stop(9999)
	r := s.analyse(t)
	if len(r.FrozenCommits) != 1 || r.FrozenCommits[0].Begin != s.ns(1000) {
		t.Fatalf("frozen commits %v, want the execution begun at 1s", r.FrozenCommits)
	}
	if !strings.Contains(r.Summary(), " frozen_commits=1 ") {
		t.Errorf("summary: %s", r.Summary())
	}
}

func TestKilledExecutionEndsAtExit(t *testing.T) {
	s := newSynth(1, 0, 0)
	s.exec("i1", 0, 1, "fire", 1000, 0, stateUnfinished)
	s.add(1300, eventlog.Event{Ev: eventlog.Exit, Inst: "i1", PID: pidOf("i1"), Detail: "signal: killed"})
	s.exec("i2", 0, 1, "failover", 5400, 7000, stateCommitted)
	s.stop(8000)
	r := s.analyse(t)
	if r.Unfinished != 1 {
		t.Fatalf("unfinished = %d, want 1", r.Unfinished)
	}
	var killed *execution
	for _, x := range r.Executions {
		if x.Inst == "i1" {
			killed = x
		}
	}
	if killed.Stop != s.ns(1300) {
		t.Errorf("killed execution stops at %s, want the exit at %s", clock(killed.Stop), clock(s.ns(1300)))
	}
	if len(r.StaleOverlaps) != 0 || len(r.Overlaps) != 0 {
		t.Errorf("stale %d overlaps %d, want 0 0", len(r.StaleOverlaps), len(r.Overlaps))
	}
	// Killed and never reaped: it runs to the end of the log.
	s2 := newSynth(1, 0, 0)
	s2.exec("i1", 0, 1, "fire", 1000, 0, stateUnfinished)
	s2.exec("i2", 0, 1, "failover", 5400, 7000, stateCommitted)
	s2.stop(8000)
	r2 := s2.analyse(t)
	if len(r2.StaleOverlaps) != 1 {
		t.Errorf("unreaped: stale %d, want 1", len(r2.StaleOverlaps))
	}
}

func TestLostFire(t *testing.T) {
	s := newSynth(2, 0, 0)
	s.fires("i1", 0, 0, 9)
	s.fires("i2", 1, 0, 4)
	s.fires("i2", 1, 6, 9)
	s.stop(9999)
	r := s.analyse(t)
	if r.Fires != 20 {
		t.Errorf("fires = %d, want 20", r.Fires)
	}
	if len(r.Lost) != 1 || r.Lost[0] != (fireItem{Fire: s.ns(5000) / 1e6, Item: 1}) {
		t.Fatalf("lost = %v, want item 1 fire 5", r.Lost)
	}
	if r.OK() {
		t.Error("OK() with a lost fire")
	}
	var buf bytes.Buffer
	r.Details(&buf)
	if !strings.Contains(buf.String(), "LOST: item 1 fires") {
		t.Errorf("details do not show the lost fire:\n%s", buf.String())
	}
}

// A replaced execution (overlap replace) ran its fire: the fire is not
// lost, and a later run of it is a duplicate.
func TestReplacedCoversItsFire(t *testing.T) {
	s := newSynth(1, 0, 0)
	s.fires("i1", 0, 0, 0)
	s.exec("i1", 0, 1, "fire", 1010, 2005, stateReplaced)
	s.exec("i1", 0, 2, "misfire", 2010, 2500, stateCommitted)
	s.exec("i1", 0, 3, "fire", 3010, 3500, stateCommitted)
	s.stop(3900)
	r := s.analyse(t)
	if len(r.Lost) != 0 || r.Replaced != 1 || !r.OK() {
		t.Fatalf("lost %v, replaced %d, ok %v", r.Lost, r.Replaced, r.OK())
	}
	if !strings.Contains(r.Summary(), " replaced=1 ") {
		t.Fatalf("summary: %s", r.Summary())
	}
	// The replaced fire run again: a duplicate no crash explains.
	s = newSynth(1, 0, 0)
	s.fires("i1", 0, 0, 0)
	s.exec("i1", 0, 1, "fire", 1010, 2005, stateReplaced)
	s.exec("i1", 0, 1, "misfire", 2010, 2500, stateCommitted)
	s.fires("i1", 0, 2, 3)
	s.stop(3900)
	if r := s.analyse(t); len(r.UnexplainedDuplicates) == 0 || r.OK() {
		t.Fatalf("a replaced fire run again: unexplained duplicates %v", r.UnexplainedDuplicates)
	}
}

func TestAbortedDoesNotCover(t *testing.T) {
	s := newSynth(1, 0, 0)
	s.fires("i1", 0, 0, 4)
	s.exec("i1", 0, 5, "fire", 5000, 5500, stateAborted)
	s.fires("i1", 0, 6, 9)
	s.stop(9999)
	r := s.analyse(t)
	if len(r.Lost) != 1 {
		t.Fatalf("lost = %v, want fire 5", r.Lost)
	}
}

func TestMisfireCoversRange(t *testing.T) {
	// Fires 3..6 were missed while fire 2 ran long; the misfire run (fire
	// time 3) began at 6.5 s and covers 3, 4, 5 and 6, not 7.
	s := newSynth(1, 0, 0)
	s.fires("i1", 0, 0, 1)
	s.exec("i1", 0, 2, "fire", 2000, 6400, stateCommitted)
	s.exec("i1", 0, 3, "misfire", 6500, 7900, stateCommitted)
	s.fires("i1", 0, 8, 9)
	s.stop(9999)
	r := s.analyse(t)
	if len(r.Lost) != 1 || r.Lost[0].Fire != s.ns(7000)/1e6 {
		t.Fatalf("lost = %v, want only fire 7", r.Lost)
	}
	// A fire-kind execution covers only its own fire.
	s2 := newSynth(1, 0, 0)
	s2.fires("i1", 0, 0, 2)
	s2.exec("i1", 0, 3, "fire", 6500, 7000, stateCommitted)
	s2.fires("i1", 0, 7, 9)
	s2.stop(9999)
	if r2 := s2.analyse(t); len(r2.Lost) != 3 {
		t.Fatalf("lost = %v, want fires 4, 5, 6", r2.Lost)
	}
}

func TestFailoverCoversRangeAndDelay(t *testing.T) {
	s := newSynth(1, 0, 0)
	s.fires("i1", 0, 0, 2)
	s.exec("i1", 0, 3, "fire", 3000, 0, stateUnfinished)
	s.add(3200, eventlog.Event{Ev: eventlog.Exit, Inst: "i1", PID: pidOf("i1")})
	s.add(1500, eventlog.Event{Ev: eventlog.StatusGone, Inst: "i1"}) // an earlier departure
	s.add(7200, eventlog.Event{Ev: eventlog.StatusGone, Inst: "i1"})
	s.add(7240, eventlog.Event{Ev: eventlog.StatusGone, Inst: "i3"}) // not the item's owner
	s.exec("i2", 0, 3, "failover", 7250, 8000, stateCommitted)
	s.fires("i2", 0, 8, 9)
	s.stop(9999)
	r := s.analyse(t)
	if len(r.Lost) != 0 {
		t.Fatalf("lost = %v, want none", r.Lost)
	}
	if r.Failovers != 1 || len(r.FailoverDelays) != 1 || r.FailoverDelays[0] != 50*time.Millisecond {
		t.Fatalf("failovers %d delays %v, want 1 [50ms]", r.Failovers, r.FailoverDelays)
	}
	if !strings.Contains(r.Summary(), " failovers=1 failover_p50_ms=50 failover_max_ms=50 ") {
		t.Errorf("summary: %s", r.Summary())
	}
}

func TestNoQuorumExcluded(t *testing.T) {
	s := newSynth(2, 0, 0)
	for item := 0; item < 2; item++ {
		s.fires("i1", item, 0, 4)
		s.fires("i1", item, 7, 9)
	}
	s.add(4500, eventlog.Event{Ev: eventlog.NoQuorumBegin})
	s.add(6700, eventlog.Event{Ev: eventlog.NoQuorumEnd})
	s.stop(9999)
	r := s.analyse(t)
	if len(r.Lost) != 0 {
		t.Fatalf("lost = %v, want none (fires 5 and 6 had no quorum)", r.Lost)
	}
	if r.NoQuorumFires != 4 || r.NoQuorumLost != 4 || r.Fires != 16 {
		t.Fatalf("noquorum fires %d (uncovered %d), fires %d; want 4 (4), 16", r.NoQuorumFires, r.NoQuorumLost, r.Fires)
	}
	if !strings.Contains(r.Summary(), " noquorum_fires=4 ") {
		t.Errorf("summary: %s", r.Summary())
	}
	// Fires just outside the window are still checked.
	s2 := newSynth(1, 0, 0)
	s2.fires("i1", 0, 0, 3)
	s2.add(4500, eventlog.Event{Ev: eventlog.NoQuorumBegin})
	s2.add(5500, eventlog.Event{Ev: eventlog.NoQuorumEnd})
	s2.fires("i1", 0, 7, 9)
	s2.stop(9999)
	r2 := s2.analyse(t)
	if len(r2.Lost) != 2 || r2.NoQuorumFires != 1 {
		t.Fatalf("lost %v noquorum %d; want fires 4 and 6 lost, 1 excluded", r2.Lost, r2.NoQuorumFires)
	}
}

func TestMarginsExcludeStartAndStop(t *testing.T) {
	s := newSynth(1, 2*time.Second, 3*time.Second)
	s.fires("i1", 0, 2, 7) // nothing at 0, 1, 8, 9
	s.stop(10000)
	r := s.analyse(t)
	if len(r.Lost) != 0 || r.Fires != 6 {
		t.Fatalf("lost %v fires %d; want none lost of 6 (2..7)", r.Lost, r.Fires)
	}
	r, err := Analyse(s.events, AnalyseOptions{Warmup: time.Second, Cooldown: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Lost) != 3 { // 1, 8, 9
		t.Fatalf("with 1s margins lost %v, want fires 1, 8, 9", r.Lost)
	}
}

func TestSummaryFormat(t *testing.T) {
	s := newSynth(1, 0, 0)
	s.fires("i1", 0, 0, 9)
	s.add(500, eventlog.Event{Ev: eventlog.FaultBegin, Fault: faultKill9, Detail: "i2"})
	s.add(900, eventlog.Event{Ev: eventlog.FaultEnd, Fault: faultKill9, Detail: "i2"})
	s.stop(9999)
	r := s.analyse(t)
	re := regexp.MustCompile(`^chaos: duration=10s instances=2 faults=1 fires=10 executions=10 overlaps=0 lost=0 duplicates=0 unexplained_duplicates=0 failovers=0 failover_p50_ms=n/a failover_max_ms=n/a noquorum_fires=0 `)
	if !re.MatchString(r.Summary()) {
		t.Fatalf("summary %q does not match %s", r.Summary(), re)
	}
	if !strings.HasSuffix(r.Summary(), " registry=zookeeper") {
		t.Errorf("summary %q: a log with no registry is from a run on ZooKeeper", r.Summary())
	}
	if !r.OK() {
		t.Error("not OK")
	}
}

func TestAnalyseNeedsConfig(t *testing.T) {
	if _, err := Analyse(nil, AnalyseOptions{}); err == nil {
		t.Error("empty log accepted")
	}
	if _, err := Analyse([]eventlog.Event{{Ev: eventlog.MeasureStart, T: 1}}, AnalyseOptions{}); err == nil {
		t.Error("log without config accepted")
	}
}

func TestEventLogRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	w, err := eventlog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(eventlog.Event{Ev: eventlog.Begin, Inst: "i1", PID: 7, Run: "r", Item: eventlog.Item(0), Fire: 1000, Kind: "fire"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(eventlog.Event{Ev: eventlog.Note, Detail: "x"}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("{\"ev\":\"end\",\"t\":12\n") // a torn line
	f.Close()
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), `"item":0`) || strings.Count(string(data), `"item"`) != 1 {
		t.Errorf("item 0 must be written for executions only:\n%s", data)
	}
	ev, bad, err := eventlog.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ev) != 2 || bad != 1 {
		t.Fatalf("read %d events, %d bad; want 2, 1", len(ev), bad)
	}
	if ev[0].ItemOf() != 0 || ev[1].ItemOf() != -1 || ev[0].T == 0 {
		t.Errorf("events: %+v", ev)
	}
}

// TestCommandAnalyse runs the command on a saved log: the summary is the
// last line and the exit status says whether the invariants held.
func TestCommandAnalyse(t *testing.T) {
	for _, tc := range []struct {
		name string
		lose bool
		code int
	}{{"pass", false, 0}, {"lost", true, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSynth(1, 0, 0)
			s.fires("i1", 0, 0, 4)
			if !tc.lose {
				s.fires("i1", 0, 5, 5)
			}
			s.fires("i1", 0, 6, 9)
			s.stop(9999)
			path := filepath.Join(t.TempDir(), "events.jsonl")
			w, err := eventlog.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range s.events {
				if err := w.Write(e); err != nil {
					t.Fatal(err)
				}
			}
			w.Close()
			var out, errb bytes.Buffer
			code := runMain([]string{"-analyse", path}, &out, &errb)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %s", code, tc.code, errb.String())
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if last := lines[len(lines)-1]; !strings.HasPrefix(last, "chaos: duration=") {
				t.Errorf("last line is not the summary: %q", last)
			}
		})
	}
}

func TestConfigValidation(t *testing.T) {
	c := DefaultConfig()
	if err := c.validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	c.Instances, c.SessionTimeout, c.Faults, c.RecordInterval = 1, 10*time.Second, []string{"kill9", "meteor"}, -time.Second
	err := c.validate()
	if err == nil {
		t.Fatal("bad config accepted")
	}
	for _, want := range []string{"instances 1", "session timeout 10s", `unknown fault "meteor"`, "record interval -1s"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	// Each registry has faults of its own; the default is every one of them.
	c = DefaultConfig()
	c.Faults = []string{faultEtcdWiped}
	if err := c.validate(); err == nil || !strings.Contains(err.Error(), `unknown fault "etcd-wiped" on zookeeper`) {
		t.Errorf("an etcd fault on zookeeper: %v", err)
	}
	c.Registry = registryEtcd
	if err := c.validate(); err != nil {
		t.Errorf("etcd-wiped on etcd: %v", err)
	}
	c.Registry, c.Faults = "consul", nil
	if err := c.validate(); err == nil || !strings.Contains(err.Error(), `registry "consul"`) {
		t.Errorf("registry consul: %v", err)
	}
	if fs := faultsFor(registryEtcd); !slices.Contains(fs, faultEtcdFrozen) || slices.Contains(fs, faultZKLeader) {
		t.Errorf("etcd's faults: %v", fs)
	}
}

func TestDuplicateWithoutACrashFailsTheRun(t *testing.T) {
	s := newSynth(1, 0, 0)
	s.fires("i1", 0, 0, 3)
	// i2 makes up for fires 2 and 3 though i1 ran them: nothing crashed.
	s.exec("i2", 0, 2, "misfire", 3600, 3900, stateCommitted)
	s.fires("i1", 0, 4, 9)
	s.stop(9999)
	r := s.analyse(t)
	if len(r.Duplicates) != 2 || len(r.UnexplainedDuplicates) != 2 {
		t.Fatalf("duplicates %d unexplained %d, want 2 2", len(r.Duplicates), len(r.UnexplainedDuplicates))
	}
	if r.OK() {
		t.Error("OK() with an unexplained duplicate")
	}
	var buf bytes.Buffer
	r.Details(&buf)
	if !strings.Contains(buf.String(), "DUPLICATE: item 0 fire") {
		t.Errorf("details do not show the duplicate:\n%s", buf.String())
	}
	if !strings.Contains(r.Summary(), " duplicates=2 unexplained_duplicates=2 ") {
		t.Errorf("summary: %s", r.Summary())
	}
}

func TestDuplicateAfterAKillIsExplained(t *testing.T) {
	s := newSynth(1, 0, 0)
	s.fires("i1", 0, 0, 2)
	// i1 ran fire 3 and was killed before its completion was recorded:
	// the failover runs fire 3 again. At least once, and said so.
	s.exec("i1", 0, 3, "fire", 3010, 3400, stateCommitted)
	s.kill9("i1", 3450, 3460, 3500)
	s.exec("i2", 0, 3, "failover", 3700, 3900, stateCommitted)
	s.fires("i2", 0, 4, 9)
	s.stop(9999)
	r := s.analyse(t)
	if len(r.Duplicates) != 1 || len(r.UnexplainedDuplicates) != 0 {
		t.Fatalf("duplicates %d unexplained %d, want 1 0", len(r.Duplicates), len(r.UnexplainedDuplicates))
	}
	if r.Duplicates[0].Cause != "kill9 i1" {
		t.Errorf("cause %q, want kill9 i1", r.Duplicates[0].Cause)
	}
	if !r.OK() {
		t.Error("not OK with an explained duplicate")
	}
}

// TestACrashExplainsOnlyTheRunsOfItsRecordInterval: with records written
// behind, a kill -9 leaves the runs of the last record interval unrecorded,
// and the next owner's make-up runs them again — explained. A run that
// ended longer before the kill than the interval (plus a run and two
// periods) had its record written: a make-up covering it is a duplicate no
// crash explains.
func TestACrashExplainsOnlyTheRunsOfItsRecordInterval(t *testing.T) {
	s := newSynth(1, 0, 0)
	interval := int64(5000)
	s.events[0].Cfg.RecordIntervalMS = &interval
	s.events[0].Cfg.WorkMS = 500
	s.fires("i1", 0, 0, 19)
	s.kill9("i1", 19700, 19710, 20000)
	// i2 makes up fires 5..24. The bound is 5 s + a run (0.5 s) + two
	// periods: 7.5 s. Fires 12..19 ended within it of the kill (fire 12 at
	// 12.51 s, 7.19 s before it); 5..11 did not.
	s.exec("i2", 0, 5, "misfire", 24100, 24300, stateCommitted)
	s.fires("i2", 0, 25, 29)
	s.stop(29999)
	r := s.analyse(t)
	if len(r.Duplicates) != 15 {
		t.Fatalf("duplicates %d, want 15 (fires 5..19)", len(r.Duplicates))
	}
	if len(r.UnexplainedDuplicates) != 7 {
		t.Errorf("unexplained %d, want 7 (fires 5..11)", len(r.UnexplainedDuplicates))
	}
	for _, d := range r.UnexplainedDuplicates {
		if d.Lag <= 7500*time.Millisecond {
			t.Errorf("fire %d: ended %v before the kill, want more than the bound of 7.5 s", d.Fire, d.Lag)
		}
	}
	var buf bytes.Buffer
	r.Details(&buf)
	for _, want := range []string{
		"longer ago than a completion in flight (or, opted in, the record interval) leaves a run unrecorded",
		// Fire 12 ended at 12.51 s, the kill came at 19.7 s.
		"the earliest of those runs ended 7.19s before the fault or loss that explains it (record interval 5s)",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("details do not say %q:\n%s", want, buf.String())
		}
	}
	// A log that does not state the interval bounds nothing.
	s.events[0].Cfg.RecordIntervalMS = nil
	if r := s.analyse(t); len(r.UnexplainedDuplicates) != 0 {
		t.Errorf("without the interval in the log: unexplained %d, want 0", len(r.UnexplainedDuplicates))
	}
}

// TestACrashWithRecordsWrittenAtOnceExplainsOnlyCompletionsInFlight: with
// the default record interval, 0, every completion is written within its
// group commit: a kill -9 leaves unrecorded only the run whose completion
// was in flight. A make-up run covering fires whose runs ended seconds
// before the kill runs completed fires again, which no crash explains;
// the run that ended just before it is explained. A session loss allows a
// session timeout more: a request the registry stopped answering stays in
// flight until the session ends.
func TestACrashWithRecordsWrittenAtOnceExplainsOnlyCompletionsInFlight(t *testing.T) {
	s := newSynth(1, 0, 0)
	zero := int64(0)
	s.events[0].Cfg.RecordIntervalMS = &zero
	s.events[0].Cfg.WorkMS = 500
	s.events[0].Cfg.SessionTimeoutMS = 4000
	s.fires("i1", 0, 0, 18)
	// Fire 19's run ends at 19.51 s; the kill comes 5 ms later, while its
	// completion may still be in flight.
	s.exec("i1", 0, 19, "fire", 19010, 19510, stateCommitted)
	s.kill9("i1", 19515, 19520, 20000)
	// i2 makes up fires 17..24: 17 and 18 ended 2.5 s and 1.5 s before the
	// kill, their records were written.
	s.exec("i2", 0, 17, "misfire", 24100, 24300, stateCommitted)
	s.fires("i2", 0, 25, 29)
	s.stop(29999)
	r := s.analyse(t)
	if len(r.Duplicates) != 3 {
		t.Fatalf("duplicates %d, want 3 (fires 17..19)", len(r.Duplicates))
	}
	if len(r.UnexplainedDuplicates) != 2 {
		t.Fatalf("unexplained %d, want 2 (fires 17 and 18)", len(r.UnexplainedDuplicates))
	}
	for _, d := range r.Duplicates {
		explained := d.Cause != ""
		if want := d.Fire == s.ns(19000)/int64(time.Millisecond); explained != want {
			t.Errorf("fire %d: cause %q, lag %v; want explained %v", d.Fire, d.Cause, d.Lag, want)
		}
	}

	// The same runs with the session lost 3 s after fire 18's run ended
	// (no kill): within the session timeout, explained.
	s = newSynth(1, 0, 0)
	s.events[0].Cfg.RecordIntervalMS = &zero
	s.events[0].Cfg.WorkMS = 500
	s.events[0].Cfg.SessionTimeoutMS = 4000
	s.fires("i1", 0, 0, 18)
	s.lose(21510, "i1")
	s.exec("i2", 0, 18, "misfire", 22100, 22300, stateCommitted)
	s.stop(29999)
	r = s.analyse(t)
	if len(r.Duplicates) != 1 || len(r.UnexplainedDuplicates) != 0 {
		t.Fatalf("duplicates %d, unexplained %d; want 1 explained by the session loss", len(r.Duplicates), len(r.UnexplainedDuplicates))
	}
}

func TestDuplicateOfARunCommittedDuringAPartitionIsExplained(t *testing.T) {
	s := newSynth(1, 0, 0)
	s.fires("i1", 0, 0, 2)
	// i1 is cut off at 2.9s; its run of fire 3 still commits on its lease,
	// but its completion never reaches ZooKeeper: i2 runs fire 3 again.
	s.add(2900, eventlog.Event{Ev: eventlog.FaultBegin, Fault: faultPartition, Detail: "i1", Inst: "i1"})
	s.exec("i1", 0, 3, "fire", 3010, 3400, stateCommitted)
	s.exec("i2", 0, 3, "failover", 7000, 7200, stateCommitted)
	s.add(8500, eventlog.Event{Ev: eventlog.FaultEnd, Fault: faultPartition, Detail: "i1", Inst: "i1"})
	s.fires("i2", 0, 8, 9)
	s.stop(9999)
	r := s.analyse(t)
	if len(r.UnexplainedDuplicates) != 0 || len(r.Duplicates) != 1 || r.Duplicates[0].Cause != "partition i1" {
		t.Fatalf("duplicates %+v, unexplained %d; want one explained by partition i1", r.Duplicates, len(r.UnexplainedDuplicates))
	}
}

// A chain's dependent run that begins before its parent completed the
// fire is an order violation; one that begins after is not.
func TestChainOrder(t *testing.T) {
	s := newSynth(2, 0, 0)
	s.events[0].Cfg.Chain, s.events[0].Cfg.JobItems = 2, 1
	// Fire 0: the parent (item 0) ends at 510, the dependent (item 1)
	// begins at 600. Fire 1: the dependent begins at 1200, before the
	// parent's end at 1510.
	s.exec("i1", 0, 0, "fire", 10, 510, stateCommitted)
	s.exec("i2", 1, 0, "fire", 600, 700, stateCommitted)
	s.exec("i1", 0, 1, "fire", 1010, 1510, stateCommitted)
	s.exec("i2", 1, 1, "fire", 1200, 1300, stateCommitted)
	s.stop(1900)
	r := s.analyse(t)
	if len(r.OrderViolations) != 1 || r.OrderViolations[0].Fire != s.ns(1000)/int64(time.Millisecond) || r.OK() {
		t.Fatalf("order violations %+v, ok %v", r.OrderViolations, r.OK())
	}
	if !strings.Contains(r.Summary(), " order_violations=1 ") {
		t.Fatalf("summary: %s", r.Summary())
	}
	var buf bytes.Buffer
	r.Details(&buf)
	if !strings.Contains(buf.String(), "ORDER: ") {
		t.Fatalf("details:\n%s", buf.String())
	}
}

// lose adds the session-lost line an instance process writes when its
// registry session ends.
func (s *synth) lose(ms int64, inst string) {
	s.add(ms, eventlog.Event{Ev: eventlog.Session, Inst: inst, PID: pidOf(inst), Detail: regcenter.SessionLost.String() + " 0x1/1"})
}

// A registry fault (here a frozen etcd leader) costs i1 its session after
// its run of fire 3 committed and before the completion was recorded: i2
// runs fire 3 again. At least once, explained by the session loss, which
// the fault's window explains in turn.
func TestDuplicateAfterASessionLossIsExplained(t *testing.T) {
	s := newSynth(1, 0, 0)
	s.events[0].Cfg.SessionTimeoutMS = 4000
	s.fires("i1", 0, 0, 2)
	s.exec("i1", 0, 3, "fire", 3010, 3400, stateCommitted)
	s.add(3450, eventlog.Event{Ev: eventlog.FaultBegin, Fault: faultEtcdFrozen, Detail: "member 1"})
	s.add(6000, eventlog.Event{Ev: eventlog.FaultEnd, Fault: faultEtcdFrozen, Detail: "member 1"})
	s.lose(6100, "i1")
	s.lose(6110, "i2")
	s.exec("i2", 0, 3, "misfire", 7000, 7200, stateCommitted)
	s.fires("i2", 0, 8, 9)
	s.stop(9999)
	r := s.analyse(t)
	if len(r.Duplicates) != 1 || len(r.UnexplainedDuplicates) != 0 || r.Duplicates[0].Cause != "session lost i1" {
		t.Fatalf("duplicates %+v, unexplained %d; want one explained by session lost i1", r.Duplicates, len(r.UnexplainedDuplicates))
	}
	if !r.OK() {
		t.Error("not OK with an explained duplicate")
	}
	if !strings.Contains(r.Summary(), " session_losses=2 unexplained_session_losses=0 ") {
		t.Errorf("summary: %s", r.Summary())
	}
	var buf bytes.Buffer
	r.Details(&buf)
	if !strings.Contains(buf.String(), "session_lost=1") {
		t.Errorf("details do not count the duplicate by its cause:\n%s", buf.String())
	}
}

// A session loss explains a duplicate only when it falls between the
// earlier run's begin and the later run's, and only the earlier run's own
// process's loss does.
func TestSessionLossOutsideTheRunsExplainsNothing(t *testing.T) {
	s := newSynth(1, 0, 0)
	s.events[0].Cfg.SessionTimeoutMS = 4000
	s.lose(500, "i1") // before the earlier run
	s.fires("i1", 0, 0, 2)
	s.exec("i1", 0, 3, "fire", 3010, 3400, stateCommitted)
	s.lose(3500, "i2") // the later run's instance, not the earlier's
	s.exec("i2", 0, 3, "misfire", 7000, 7200, stateCommitted)
	s.lose(7300, "i1") // after the later run began
	s.fires("i2", 0, 8, 9)
	s.stop(9999)
	r := s.analyse(t)
	if len(r.Duplicates) != 1 || len(r.UnexplainedDuplicates) != 1 {
		t.Fatalf("duplicates %d unexplained %d, want 1 1", len(r.Duplicates), len(r.UnexplainedDuplicates))
	}
	if r.OK() {
		t.Error("OK() with an unexplained duplicate")
	}
}

// A session lost with no fault to account for it stays visible: a loss
// after a fault's window plus the session timeout, or during a fault of
// another instance, is unexplained; one inside its own instance's fault,
// or inside a registry fault's window plus the session timeout, is not.
func TestSessionLossWithoutAFaultIsUnexplained(t *testing.T) {
	s := newSynth(1, 0, 0)
	s.events[0].Cfg.SessionTimeoutMS = 2000
	s.fires("i1", 0, 0, 29)
	s.lose(1500, "i2") // no fault at all
	s.add(3000, eventlog.Event{Ev: eventlog.FaultBegin, Fault: faultPartition, Detail: "i1", Inst: "i1"})
	s.lose(5000, "i1") // its own partition: explained
	s.lose(5100, "i2") // i1's partition does not cut i2 off
	s.add(8000, eventlog.Event{Ev: eventlog.FaultEnd, Fault: faultPartition, Detail: "i1", Inst: "i1"})
	s.add(10000, eventlog.Event{Ev: eventlog.FaultBegin, Fault: faultEtcdLeader, Detail: "member 0"})
	s.add(12000, eventlog.Event{Ev: eventlog.FaultEnd, Fault: faultEtcdLeader, Detail: "member 0"})
	s.lose(13900, "i2") // within the session timeout after the fault: explained
	s.lose(14100, "i1") // past it: unexplained
	s.stop(29999)
	r := s.analyse(t)
	if len(r.SessionLosses) != 5 || len(r.UnexplainedSessionLosses) != 3 {
		t.Fatalf("session losses %d unexplained %d, want 5 3", len(r.SessionLosses), len(r.UnexplainedSessionLosses))
	}
	for i, want := range []int64{1500, 5100, 14100} {
		if got := r.UnexplainedSessionLosses[i].T; got != s.ns(want) {
			t.Errorf("unexplained loss %d at %s, want %s", i, clock(got), clock(s.ns(want)))
		}
	}
	if !strings.Contains(r.Summary(), " session_losses=5 unexplained_session_losses=3 ") {
		t.Errorf("summary: %s", r.Summary())
	}
	var buf bytes.Buffer
	r.Details(&buf)
	if n := strings.Count(buf.String(), "SESSION LOST with no fault"); n != 3 {
		t.Errorf("details show %d unexplained session losses, want 3:\n%s", n, buf.String())
	}
}

// ended adds a fire_ended line of inst for items of the fire at fireSec.
func (s *synth) ended(inst string, ms, fireSec int64, items ...int) {
	s.add(ms, eventlog.Event{Ev: eventlog.FireEnded, Inst: inst, PID: pidOf(inst), Fire: s.ns(fireSec*1000) / int64(time.Millisecond), Kind: "fire", Items: items})
}

func TestALoggedCompletionDecidesWhatACrashExplains(t *testing.T) {
	zero := int64(0)
	build := func(endedMS int64) *Report {
		s := newSynth(1, 0, 0)
		s.events[0].Cfg.RecordIntervalMS = &zero
		s.events[0].Cfg.WorkMS = 500
		s.events[0].Cfg.SessionTimeoutMS = 4000
		s.fires("i1", 0, 0, 18)
		// Fire 18's run ends at 18.51 s, 5 ms before the kill: within a
		// completion in flight, were its completion's return not logged.
		if endedMS > 0 {
			s.ended("i1", endedMS, 18, 0)
		}
		s.kill9("i1", 18515, 18520, 20000)
		s.exec("i2", 0, 18, "misfire", 22100, 22300, stateCommitted)
		s.fires("i2", 0, 23, 29)
		s.stop(29999)
		return s.analyse(t)
	}
	// Its completion returned 2 ms before the kill: the record was in the
	// registry, and its fire ran again.
	r := build(18513)
	if !r.CompletionsLogged || len(r.Duplicates) != 1 || len(r.UnexplainedDuplicates) != 1 {
		t.Fatalf("completion returned before the kill: duplicates %d, unexplained %d; want 1 unexplained", len(r.Duplicates), len(r.UnexplainedDuplicates))
	}
	var out bytes.Buffer
	r.Details(&out)
	if !strings.Contains(out.String(), "completion returned at") {
		t.Errorf("the report does not say when the completion returned:\n%s", out.String())
	}
	// No line for it (the process died first): the bound decides, and
	// 5 ms is within it.
	r = build(0)
	if len(r.Duplicates) != 1 || len(r.UnexplainedDuplicates) != 0 {
		t.Fatalf("completion not seen returning before the kill: duplicates %d, unexplained %d; want 1 explained", len(r.Duplicates), len(r.UnexplainedDuplicates))
	}
}

// A failed run, its fire's last try, counts its fire as run; its retries
// (higher attempts) are neither lost fires nor duplicates, but a run of
// its fire after it that is no retry is a duplicate; a failed run its
// process tried again covers nothing, so that when that try is cut short
// the fire's run elsewhere is no duplicate; and a failed run beside a
// committed one of its item elsewhere is an overlap.
func TestAFailedRunAndItsRetries(t *testing.T) {
	s := newSynth(1, 0, 0)
	s.fires("i1", 0, 0, 0)
	s.attempt(1, "i1", 0, 1, 1010, 1100, stateFailed)
	s.attempt(2, "i1", 0, 1, 1300, 1400, stateFailed)
	s.attempt(3, "i1", 0, 1, 1600, 1700, stateCommitted)
	s.attempt(1, "i1", 0, 2, 2010, 2100, stateFailed) // no retry ran: still not lost
	s.fires("i1", 0, 3, 3)
	s.stop(3900)
	r := s.analyse(t)
	if len(r.Lost) != 0 || r.Failed != 3 || r.Retried != 2 || len(r.Duplicates) != 0 || !r.OK() {
		t.Fatalf("lost %v, failed %d, retried %d, duplicates %d, ok %v", r.Lost, r.Failed, r.Retried, len(r.Duplicates), r.OK())
	}
	if !strings.Contains(r.Summary(), " failed=3 retried=2 ") {
		t.Fatalf("summary: %s", r.Summary())
	}

	s = newSynth(1, 0, 0)
	s.fires("i1", 0, 0, 0)
	s.attempt(1, "i1", 0, 1, 1010, 1100, stateFailed)
	s.attempt(1, "i2", 0, 1, 1300, 1400, stateCommitted) // not a retry: the fire again
	s.fires("i1", 0, 2, 3)
	s.stop(3900)
	if r := s.analyse(t); len(r.UnexplainedDuplicates) != 1 || r.OK() {
		t.Fatalf("a failed fire run again as a first try: unexplained duplicates %v", r.UnexplainedDuplicates)
	}

	// The retry cut short (the instance frozen, its session lost), and
	// the fire run elsewhere from attempt 1, as after any run cut short.
	s = newSynth(1, 0, 0)
	s.fires("i1", 0, 0, 0)
	s.attempt(1, "i1", 0, 1, 1010, 1011, stateFailed)
	s.attempt(2, "i1", 0, 1, 1060, 2600, stateAborted)
	s.attempt(1, "i2", 0, 1, 2700, 2800, stateCommitted)
	s.fires("i2", 0, 2, 3)
	s.stop(3900)
	if r := s.analyse(t); len(r.Lost) != 0 || len(r.Duplicates) != 0 || r.Retried != 1 || !r.OK() {
		t.Fatalf("a retry cut short, the fire run elsewhere: lost %v, duplicates %v, retried %d", r.Lost, r.Duplicates, r.Retried)
	}

	s = newSynth(1, 0, 0)
	s.fires("i1", 0, 0, 0)
	s.attempt(1, "i1", 0, 1, 1010, 1500, stateFailed)
	s.attempt(1, "i2", 0, 2, 1200, 2500, stateCommitted)
	s.fires("i1", 0, 3, 3)
	s.stop(3900)
	if r := s.analyse(t); len(r.Overlaps) != 1 || r.OK() {
		t.Fatalf("a failed run beside a committed one elsewhere: overlaps %v", r.Overlaps)
	}
}

// A backfill beside the live fires: each fire of its range once on every
// item passes; a fire it never ran is lost once it is logged through; one
// run twice without a fault is unexplained, with a kill -9 of the earlier
// run's instance explained; a backfill run beside a live run of its item
// is an overlap; one never logged through fails the run.
func TestBackfillChecked(t *testing.T) {
	build := func(through bool, twice string) *Report {
		s := newSynth(2, 0, 0)
		s.fires("i1", 0, 0, 9)
		s.fires("i2", 1, 0, 9)
		s.add(2500, eventlog.Event{Ev: eventlog.BackfillStart, Fire: s.ns(1000) / int64(time.Millisecond), Through: s.ns(3000) / int64(time.Millisecond), Detail: "b1"})
		// Each backfill run in a gap of its item's live fires.
		for f := int64(1); f <= 3; f++ {
			s.exec("i1", 0, f, "backfill", (3+f)*1000+600, (3+f)*1000+650, stateCommitted)
			if !(twice == "lost" && f == 3) {
				s.exec("i2", 1, f, "backfill", (3+f)*1000+700, (3+f)*1000+750, stateCommitted)
			}
		}
		switch twice {
		case "plain":
			s.exec("i1", 0, 2, "backfill", 7600, 7650, stateCommitted)
		case "killed":
			s.kill9("i1", 5700, 5710, 6000)
			s.exec("i2", 0, 2, "backfill", 7600, 7650, stateCommitted)
		case "overlap":
			s.exec("i2", 0, 1, "backfill", 8020, 8100, stateCommitted) // beside i1's fire 8 (8010–8510)
		}
		if through {
			s.add(8000, eventlog.Event{Ev: eventlog.BackfillThrough, Detail: "b1"})
		}
		s.stop(9600)
		return s.analyse(t)
	}
	if r := build(true, ""); !r.OK() || r.BackfillRuns != 6 || len(r.BackfillDuplicates) != 0 {
		t.Errorf("a clean backfill: ok %v, %d runs, %d duplicates: %s", r.OK(), r.BackfillRuns, len(r.BackfillDuplicates), r.Summary())
	}
	if r := build(true, "lost"); r.OK() || len(r.BackfillLost) != 1 || r.BackfillLost[0].Item != 1 {
		t.Errorf("a fire never run: lost %v", r.BackfillLost)
	}
	if r := build(false, "lost"); r.OK() || len(r.BackfillLost) != 0 || !r.BackfillNotThrough {
		t.Errorf("a backfill not through: ok %v, lost %v, not through %v", r.OK(), r.BackfillLost, r.BackfillNotThrough)
	}
	if r := build(true, "plain"); r.OK() || len(r.BackfillUnexplained) != 1 {
		t.Errorf("a fire run twice, no fault: unexplained %d", len(r.BackfillUnexplained))
	}
	if r := build(true, "killed"); !r.OK() || len(r.BackfillDuplicates) != 1 || len(r.BackfillUnexplained) != 0 {
		t.Errorf("a fire run again after a kill -9: duplicates %d, unexplained %d: %s", len(r.BackfillDuplicates), len(r.BackfillUnexplained), r.Summary())
	}
	if r := build(true, "overlap"); r.OK() || len(r.Overlaps) != 1 {
		t.Errorf("a backfill run beside a live run: overlaps %d", len(r.Overlaps))
	}
}
