package job

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

// A record written before spans existed reads as one span.
func TestALegacyRecordReadsAsOneSpan(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	old := coverOf(completedMark{Fire: at(30).UnixMilli(), Floor: at(20).UnixMilli()}).Spans()
	if len(old) != 1 || !old[0].First.Equal(at(20)) || !old[0].Last.Equal(at(30)) {
		t.Errorf("legacy record: %v", old)
	}
}

// TestMarksMarshalAsJSON checks that the marks' own encoders write what
// json.Marshal writes, byte for byte: what goes into the registry is the
// same as before they existed.
func TestMarksMarshalAsJSON(t *testing.T) {
	strs := []string{"", "10.0.0.5@-@4242", "fire", "0x1f/3", `say "hi"`, `back\slash`, "a<b>&c", "tab\there",
		"nul\x00", "é ü 中", "bad \xff utf8", "line\u2028sep", "\x7f"}
	rans := [][][2]int64{nil, {}, {{1, 2}}, {{1764280800000, 1764280810000}, {-5, 0}, {9, 9}}}
	for i, s := range strs {
		other := strs[(i+3)%len(strs)]
		for j, ran := range rans {
			for _, n := range []int64{0, 1, -1, 1764280800123, 1<<63 - 1, -1 << 63} {
				cm := completedMark{Server: s, Fire: n, Since: n * int64(j%2), Ran: ran, Floor: n * int64(i%2), Kind: Kind(other), Begin: -n, End: n, Error: strs[(i+j)%len(strs)]}
				if j%2 == 1 {
					cm.Failed = []failedRun{{First: n, Last: -n, Error: other}, {First: 1, Last: 2, Error: s}}
				}
				want, err := json.Marshal(cm)
				if err != nil {
					t.Fatal(err)
				}
				if got := cm.marshal(); !bytes.Equal(got, want) {
					t.Errorf("completed mark %+v:\n got %s\nwant %s", cm, got, want)
				}
				rm := runningMark{Server: s, Fire: n, Kind: Kind(other), Begin: -n, Session: strs[(i+j)%len(strs)]}
				want, err = json.Marshal(rm)
				if err != nil {
					t.Fatal(err)
				}
				if got := rm.marshal(); !bytes.Equal(got, want) {
					t.Errorf("running mark %+v:\n got %s\nwant %s", rm, got, want)
				}
			}
		}
	}
}

// FuzzMarksMarshalAsJSON is TestMarksMarshalAsJSON over any strings.
func FuzzMarksMarshalAsJSON(f *testing.F) {
	f.Add("10.0.0.5@-@4242", "fire", "boom <&>", int64(1764280800000))
	f.Fuzz(func(t *testing.T, server, kind, text string, n int64) {
		cm := completedMark{Server: server, Fire: n, Since: n / 2, Ran: [][2]int64{{n, n}}, Kind: Kind(kind), Begin: n, End: -n, Error: text,
			Failed: []failedRun{{First: n, Last: n, Error: text}}}
		if want, _ := json.Marshal(cm); !bytes.Equal(cm.marshal(), want) {
			t.Errorf("completed mark %+v: got %s, want %s", cm, cm.marshal(), want)
		}
		rm := runningMark{Server: server, Fire: n, Kind: Kind(kind), Begin: n, Session: text}
		if want, _ := json.Marshal(rm); !bytes.Equal(rm.marshal(), want) {
			t.Errorf("running mark %+v: got %s, want %s", rm, rm.marshal(), want)
		}
	})
}

// A record lists each recent failed run with the fires it stood for: a
// later success leaves an earlier fire's failure listed, a run of the same
// fires again (after a crash) replaces it, and the list keeps the newest
// maxFailed within the fires the cover speaks of. A reader asks for the
// result of the fires it waits for.
func TestFailedRunsAreListedPerFire(t *testing.T) {
	sched, err := cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow).Parse("* * * * * *")
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	at := func(s int) time.Time { return base.Add(time.Duration(s) * time.Second) }
	boom := errors.New("boom")
	var cov cover
	var failed []failedRun
	run := func(first, last int, err error) completedMark {
		cov = cov.With(sched, at(first), at(last))
		failed = failedAfter(failed, cov, at(first), at(last), err)
		m := completedMark{Fire: cov.Through().UnixMilli(), Ran: cov.Ran(), Failed: failed}
		if err != nil {
			m.Error = err.Error()
		}
		return m
	}
	run(1, 1, nil)
	run(2, 2, boom)
	m := run(3, 3, nil)
	if at, msg := failureOf(m, at(2), at(2)); msg != "boom" || !at.Equal(base.Add(2*time.Second)) {
		t.Errorf("fire 2 after fire 3 succeeded: %v %q, want its failure", at, msg)
	}
	if _, msg := failureOf(m, at(3), at(3)); msg != "" {
		t.Errorf("fire 3: %q, want success", msg)
	}
	// Fire 2 run again (a make-up after a crash), and succeeding: its
	// latest result counts.
	m = run(2, 3, nil)
	if _, msg := failureOf(m, at(1), at(3)); msg != "" {
		t.Errorf("fires 1-3 after fire 2 ran again: %q, want success", msg)
	}
	// The newest maxFailed failures are kept.
	for s := 10; s < 10+2*maxFailed; s++ {
		m = run(s, s, boom)
	}
	if len(m.Failed) != maxFailed || m.Failed[0].First != at(10+maxFailed).UnixMilli() {
		t.Errorf("failed %v, want the newest %d", m.Failed, maxFailed)
	}
	// A record written before Failed existed: its latest run's error, for
	// fires up to that run.
	old := completedMark{Fire: at(5).UnixMilli(), Error: "old"}
	if _, msg := failureOf(old, at(4), at(5)); msg != "old" {
		t.Errorf("old record: %q", msg)
	}
}
