package retry

import (
	"testing"
	"time"
)

func TestWaitDoublesUpToTheCap(t *testing.T) {
	p := Policy{Attempts: 10, Backoff: time.Second, MaxBackoff: 5 * time.Second}
	// Attempts 0 and 1 are not retries; 2 is the first.
	want := []time.Duration{time.Second, time.Second, time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for attempt, w := range want {
		if got := p.Wait(attempt, 0.5); got != w {
			t.Errorf("Wait(%d) = %v, want %v", attempt, got, w)
		}
	}
}

func TestWaitNeverOverflows(t *testing.T) {
	p := Policy{Attempts: 100, Backoff: time.Hour, MaxBackoff: time.Duration(1<<63 - 1)}
	for attempt := 2; attempt <= 101; attempt++ {
		if got := p.Wait(attempt, 0.999); got < time.Hour {
			t.Fatalf("Wait(%d) = %v, below the first backoff", attempt, got)
		}
	}
}

func TestWaitJitterStaysWithinItsBounds(t *testing.T) {
	p := Policy{Attempts: 5, Backoff: 10 * time.Second, MaxBackoff: time.Minute, Jitter: 0.2}
	for attempt := 2; attempt <= 6; attempt++ {
		base := Policy{Backoff: p.Backoff, MaxBackoff: p.MaxBackoff}.Wait(attempt, 0)
		lo, hi := base-base/5, base+base/5
		for i := 0; i <= 100; i++ {
			u := float64(i) / 101
			got := p.Wait(attempt, u)
			if got < lo || got > hi {
				t.Fatalf("Wait(%d, %v) = %v, outside [%v, %v]", attempt, u, got, lo, hi)
			}
		}
		if got := p.Wait(attempt, 0); got != lo {
			t.Errorf("Wait(%d, 0) = %v, want the low bound %v", attempt, got, lo)
		}
	}
	full := Policy{Backoff: time.Second, MaxBackoff: time.Second, Jitter: 1}
	if got := full.Wait(2, 0); got != 0 {
		t.Errorf("a full jitter's lowest wait = %v, want 0", got)
	}
}

func TestNext(t *testing.T) {
	now := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	p := Policy{Attempts: 2, Backoff: time.Second, MaxBackoff: 10 * time.Second}
	cases := []struct {
		name    string
		attempt int
		next    time.Time
		want    Decision
		at      time.Time
	}{
		{"first failure retries", 1, now.Add(time.Minute), Retry, now.Add(time.Second)},
		{"second failure doubles", 2, now.Add(time.Minute), Retry, now.Add(2 * time.Second)},
		{"no attempt left", 3, now.Add(time.Minute), Stop, time.Time{}},
		{"no next fire", 1, time.Time{}, Retry, now.Add(time.Second)},
		{"next fire first", 1, now.Add(500 * time.Millisecond), Yield, now.Add(time.Second)},
		{"next fire at the retry", 1, now.Add(time.Second), Yield, now.Add(time.Second)},
		{"attempt zero", 0, now.Add(time.Minute), Stop, time.Time{}},
	}
	for _, c := range cases {
		d, at := p.Next(c.attempt, now, c.next, 0.5)
		if d != c.want || !at.Equal(c.at) {
			t.Errorf("%s: Next = %v %v, want %v %v", c.name, d, at, c.want, c.at)
		}
	}
	if d, _ := (Policy{}).Next(1, now, time.Time{}, 0); d != Stop {
		t.Errorf("a policy without attempts says %v, want stop", d)
	}
}
