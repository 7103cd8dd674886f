package reconcile

import (
	"context"
	"sync"
	"testing"
	"time"
)

// A job is first due an interval after it is first seen, and then once
// each interval from the round that took it.
func TestDueTake(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := Due{}
	for i, c := range []struct {
		name  string
		at    time.Duration
		every time.Duration
		due   bool
	}{
		{"a", 0, time.Minute, false},                 // first seen
		{"a", 30 * time.Second, time.Minute, false},  // not yet
		{"b", 30 * time.Second, time.Minute, false},  // first seen
		{"a", time.Minute, time.Minute, true},        // an interval after
		{"a", 90 * time.Second, time.Minute, false},  // from the round taken
		{"b", 90 * time.Second, time.Minute, true},   // its own interval
		{"a", 2 * time.Minute, time.Minute, true},    // again
		{"a", 2*time.Minute + 1, time.Second, false}, // a shorter interval counts from the last
		{"a", 2*time.Minute + time.Second, time.Second, true},
	} {
		if got := d.Take(c.name, t0.Add(c.at), c.every); got != c.due {
			t.Errorf("%d: Take(%s, +%v, %v) = %v, want %v", i, c.name, c.at, c.every, got, c.due)
		}
	}
}

// A job removed leaves nothing in Due, and added again under its name it
// is new: first due an interval after it is seen again, not at once.
func TestDueKeepForgetsRemovedJobs(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := Due{}
	d.Take("a", t0, time.Minute)
	d.Take("b", t0, time.Minute)
	d.Keep(map[string]bool{"b": true})
	if _, ok := d["a"]; ok || len(d) != 1 {
		t.Fatalf("after a was removed Due holds %v, want b alone", d)
	}
	if d.Take("a", t0.Add(2*time.Minute), time.Minute) {
		t.Error("a job added again is due at once, want an interval after it is seen again")
	}
	if !d.Take("a", t0.Add(3*time.Minute), time.Minute) {
		t.Error("a job added again is not due an interval after it was seen again")
	}
}

func TestPlaced(t *testing.T) {
	for s, want := range map[string]bool{"": true, "BALANCED": true, "IDLEST": true, "AVG_ALLOCATION": false, "ODEVITY": false} {
		if got := Placed(s); got != want {
			t.Errorf("Placed(%q) = %v, want %v", s, got, want)
		}
	}
}

// The loop measures the clock before the round of a job that needs it,
// once a round, and takes each job's round once its interval passed.
func TestLoopMeasuresBeforeTheRound(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu    sync.Mutex
		calls []string
	)
	note := func(s string) {
		mu.Lock()
		calls = append(calls, s)
		mu.Unlock()
	}
	rounds := make(chan struct{}, 8)
	l := Loop{
		Default: time.Millisecond,
		Jobs: func() []Job {
			note("round")
			return []Job{
				{Name: "plain", Every: time.Millisecond, Round: func(*Seen) *Round { note("plain"); return nil }},
				{Name: "clocked", Every: time.Millisecond, Clock: true, Round: func(*Seen) *Round { note("clocked"); rounds <- struct{}{}; return nil }},
				{Name: "clocked2", Every: time.Millisecond, Clock: true, Round: func(*Seen) *Round { note("clocked2"); return nil }},
			}
		},
		Review:       func() {},
		MeasureClock: func() { note("measure") },
	}
	done := make(chan struct{})
	go func() { l.Run(ctx); close(done) }()
	<-rounds
	<-rounds
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	// Each round: "round", then the plain job's round if due, then one
	// measure, then the clocked jobs' rounds if due.
	var round []string
	check := func() {
		if len(round) == 0 {
			return
		}
		measures, measured := 0, false
		for _, c := range round {
			switch c {
			case "measure":
				measures++
				measured = true
			case "clocked", "clocked2":
				if !measured {
					t.Errorf("round %v: a clocked job's round before the measure", round)
				}
			}
		}
		if measures != 1 {
			t.Errorf("round %v: %d measures, want 1", round, measures)
		}
	}
	for _, c := range calls {
		if c == "round" {
			check()
			round = nil
			continue
		}
		round = append(round, c)
	}
	check()
}
