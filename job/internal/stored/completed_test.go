package stored

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job/internal/fireplan"
)

// everySecond is a schedule firing on every second.
type everySecond struct{}

func (everySecond) Next(t time.Time) time.Time { return t.Truncate(time.Second).Add(time.Second) }

// A record written before spans existed reads as one span.
func TestALegacyRecordReadsAsOneSpan(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	m := Completed{Fire: at(30).UnixMilli(), Floor: at(20).UnixMilli()}
	old := m.Cover().Spans()
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
				cm := Completed{Server: s, Fire: n, Since: n * int64(j%2), Ran: ran, Floor: n * int64(i%2), Kind: other, Begin: -n, End: n, Error: strs[(i+j)%len(strs)]}
				if j%2 == 1 {
					cm.Failed = []FailedRun{{First: n, Last: -n, Error: other}, {First: 1, Last: 2, Error: s}}
				}
				if i%3 == 0 {
					cm.Journal = other
				}
				want, err := json.Marshal(cm)
				if err != nil {
					t.Fatal(err)
				}
				if got := cm.Marshal(); !bytes.Equal(got, want) {
					t.Errorf("completed record %+v:\n got %s\nwant %s", cm, got, want)
				}
				rm := Running{Server: s, Fire: n, Kind: other, Begin: -n, Session: strs[(i+j)%len(strs)]}
				want, err = json.Marshal(rm)
				if err != nil {
					t.Fatal(err)
				}
				if got := rm.Marshal(); !bytes.Equal(got, want) {
					t.Errorf("running mark %+v:\n got %s\nwant %s", rm, got, want)
				}
				mm := Misfire{Since: n}
				if want, _ = json.Marshal(mm); !bytes.Equal(mm.Marshal(), want) {
					t.Errorf("misfire mark %+v:\n got %s\nwant %s", mm, mm.Marshal(), want)
				}
			}
		}
	}
}

// FuzzMarksMarshalAsJSON is TestMarksMarshalAsJSON over any strings.
func FuzzMarksMarshalAsJSON(f *testing.F) {
	f.Add("10.0.0.5@-@4242", "fire", "boom <&>", int64(1764280800000))
	f.Fuzz(func(t *testing.T, server, kind, text string, n int64) {
		cm := Completed{Server: server, Fire: n, Since: n / 2, Ran: [][2]int64{{n, n}}, Kind: kind, Begin: n, End: -n, Error: text,
			Failed: []FailedRun{{First: n, Last: n, Error: text}}, Journal: kind}
		if want, _ := json.Marshal(cm); !bytes.Equal(cm.Marshal(), want) {
			t.Errorf("completed record %+v: got %s, want %s", cm, cm.Marshal(), want)
		}
		rm := Running{Server: server, Fire: n, Kind: kind, Begin: n, Session: text}
		if want, _ := json.Marshal(rm); !bytes.Equal(rm.Marshal(), want) {
			t.Errorf("running mark %+v: got %s, want %s", rm, rm.Marshal(), want)
		}
		mm := Misfire{Since: n}
		if want, _ := json.Marshal(mm); !bytes.Equal(mm.Marshal(), want) {
			t.Errorf("misfire mark %+v: got %s, want %s", mm, mm.Marshal(), want)
		}
	})
}

// A record lists each recent failed run with the fires it stood for: a
// later success leaves an earlier fire's failure listed, a run of the same
// fires again (after a crash) replaces it, and the list keeps the newest
// maxFailed within the fires the cover speaks of. A reader asks for the
// result of the fires it waits for.
func TestFailedRunsAreListedPerFire(t *testing.T) {
	sched := everySecond{}
	base := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	at := func(s int) time.Time { return base.Add(time.Duration(s) * time.Second) }
	boom := errors.New("boom")
	var cov fireplan.Cover
	var failed []FailedRun
	run := func(first, last int, err error) Completed {
		cov = cov.With(sched, at(first), at(last))
		failed = FailedAfter(failed, cov, at(first), at(last), err)
		m := Completed{Fire: cov.Through().UnixMilli(), Ran: cov.Ran(), Failed: failed}
		if err != nil {
			m.Error = err.Error()
		}
		return m
	}
	run(1, 1, nil)
	run(2, 2, boom)
	m := run(3, 3, nil)
	if at, msg := m.Failure(at(2), at(2)); msg != "boom" || !at.Equal(base.Add(2*time.Second)) {
		t.Errorf("fire 2 after fire 3 succeeded: %v %q, want its failure", at, msg)
	}
	if _, msg := m.Failure(at(3), at(3)); msg != "" {
		t.Errorf("fire 3: %q, want success", msg)
	}
	// Fire 2 run again (a make-up after a crash), and succeeding: its
	// latest result counts.
	m = run(2, 3, nil)
	if _, msg := m.Failure(at(1), at(3)); msg != "" {
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
	old := Completed{Fire: at(5).UnixMilli(), Error: "old"}
	if _, msg := old.Failure(at(4), at(5)); msg != "old" {
		t.Errorf("old record: %q", msg)
	}
}

// An error of any size is kept whole up to MaxRecordedError bytes, then
// cut on a character boundary saying how much was left out; a listed
// failed run keeps less.
func TestRecordedErrorIsCut(t *testing.T) {
	short := errors.New("boom")
	if got := RecordedError(short); got != "boom" {
		t.Errorf("short error: %q", got)
	}
	huge := errors.New(string(bytes.Repeat([]byte("é"), MaxRecordedError))) // two bytes a character
	got := RecordedError(huge)
	const want = "… (4096 bytes more)"
	if len(got) != MaxRecordedError+len(want) || got[len(got)-len(want):] != want {
		t.Errorf("huge error cut to %d bytes ending %q", len(got), got[max(0, len(got)-40):])
	}
	fs := FailedAfter(nil, fireplan.Cover{}, time.UnixMilli(1000), time.UnixMilli(1000), huge)
	if len(fs) != 1 || len(fs[0].Error) > maxFailedError+len("…") {
		t.Errorf("listed failed run keeps %d bytes of its error", len(fs[0].Error))
	}
}
