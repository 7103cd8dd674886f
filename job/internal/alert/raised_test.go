package alert

import (
	"errors"
	"testing"
	"time"
)

// TestRaisedErr: what each kind of alert says, and the sentinel it wraps.
func TestRaisedErr(t *testing.T) {
	late, notRun := errors.New("late"), errors.New("not run")
	fire := time.Date(2026, 3, 1, 12, 0, 0, 500_000_000, time.UTC)
	tests := []struct {
		name string
		r    Raised
		is   error
		want string
	}{
		{"late", Raised{Kind: KindLate, Job: "a", Fire: fire, Bound: time.Minute}, late,
			`late: job "a" fire 2026-03-01T12:00:00.5Z had not completed 1m0s after its time`},
		{"not run, ran once", Raised{Kind: KindNotRun, Job: "b", Fire: fire, Bound: time.Hour}, notRun,
			`not run: job "b" had no successful run for 1h0m0s (last ran 2026-03-01T12:00:00Z)`},
		{"not run, never ran", Raised{Kind: KindNotRun, Job: "c", Bound: time.Hour}, notRun,
			`not run: job "c" had no successful run for 1h0m0s (never ran)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.r.Err(late, notRun)
			if !errors.Is(err, tt.is) || err.Error() != tt.want {
				t.Fatalf("got %v, want %q wrapping %v", err, tt.want, tt.is)
			}
		})
	}
}

// TestNilCandidate: an instance that does not check campaigns for nothing.
func TestNilCandidate(t *testing.T) {
	var c *Candidate
	c.Campaign(t.Context())
	c.Leave(t.Context())
}
