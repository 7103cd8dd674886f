package reshard

import (
	"testing"
	"time"

	"github.com/shardjob/shardjob/job/internal/fireplan"
)

// everySecond fires on every whole second.
type everySecond struct{}

func (everySecond) Next(t time.Time) time.Time { return t.Truncate(time.Second).Add(time.Second) }

// never has no fire.
type never struct{}

func (never) Next(time.Time) time.Time { return time.Time{} }

func TestFirstMissedIsTheFireTheReshardComesBefore(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name  string
		sched fireplan.Schedule
		now   time.Time
		lead  time.Duration
		want  time.Time
	}{
		{name: "within the next fire's lead: that fire", sched: everySecond{}, now: t0.Add(700 * time.Millisecond), lead: 500 * time.Millisecond, want: t0.Add(time.Second)},
		{name: "within a lead after a fire: that fire", sched: everySecond{}, now: t0.Add(200 * time.Millisecond), lead: 500 * time.Millisecond, want: t0},
		{name: "longer after a fire: the next one", sched: everySecond{}, now: t0.Add(200 * time.Millisecond), lead: 100 * time.Millisecond, want: t0.Add(time.Second)},
		{name: "no lead, at a fire: that fire", sched: everySecond{}, now: t0, want: t0},
		{name: "no fire: none", sched: never{}, now: t0, lead: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FirstMissed(tt.sched, tt.now, tt.lead); !got.Equal(tt.want) {
				t.Errorf("FirstMissed = %v, want %v", got, tt.want)
			}
		})
	}
}
