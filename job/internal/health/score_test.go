package health

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"
)

func TestScore(t *testing.T) {
	for _, tt := range []struct {
		s           Sample
		free, slots int
		want        float64
	}{
		{Sample{IdleCPU: 1, FreeMemory: 1}, 4, 4, 100},
		{Sample{}, 0, 4, 0},
		{Sample{IdleCPU: 0.5, FreeMemory: 0.5}, 2, 4, 50},
		{Sample{IdleCPU: 0.9, FreeMemory: 1}, 1, 1, 93.6},
		{Sample{IdleCPU: 1, FreeMemory: 1}, -3, 4, 68}, // more running than slots: none free
		{Sample{IdleCPU: 2, FreeMemory: -1}, 1, 1, 96}, // out-of-range shares are clamped
		{Sample{IdleCPU: 1 / 3.0, FreeMemory: 0}, 0, 1, 21.33},
	} {
		if got := Score(tt.s, tt.free, tt.slots); got != tt.want {
			t.Errorf("Score(%+v, %d/%d) = %v, want %v", tt.s, tt.free, tt.slots, got, tt.want)
		}
	}
}

func TestPreemptDelay(t *testing.T) {
	for score, want := range map[float64]time.Duration{
		100: 0, 99.5: 5 * time.Millisecond, 50: 500 * time.Millisecond, 0: time.Second, -20: time.Second, 130: 0,
	} {
		if got := preemptDelay(score); got != want {
			t.Errorf("preemptDelay(%v) = %v, want %v", score, got, want)
		}
	}
}

func TestPreemptWaitEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if PreemptWait(ctx, 0) {
		t.Fatal("PreemptWait reported its delay waited out under an ended context")
	}
	if !PreemptWait(context.Background(), 100) {
		t.Fatal("PreemptWait of a fully idle score did not report its delay waited out")
	}
}

// The score loop publishes the first score, then only a score a point or
// more away from the last published, and tries again after a failed
// publication whatever the score.
func TestScoresPublishWhenMovedByAPoint(t *testing.T) {
	idle := []float64{1, 0.995, 0.5, 0.5, 0.5}
	fail := map[int]bool{2: true} // the third sample's publication fails
	type pub struct {
		score float64
		free  int
	}
	var pubs []pub
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n, calls := 0, 0
	Scores{
		Every: time.Millisecond,
		Slots: 4,
		Sample: func() (Sample, error) {
			if n == len(idle) {
				cancel()
				return Sample{}, errors.New("no more samples")
			}
			s := Sample{IdleCPU: idle[n], FreeMemory: 1}
			n++
			return s, nil
		},
		Running: func() int { return 1 },
		Publish: func(ctx context.Context, score float64, free int) error {
			calls++
			if _, ok := ctx.Deadline(); !ok {
				t.Error("a publication without a deadline")
			}
			if fail[n-1] {
				return errors.New("registry down")
			}
			pubs = append(pubs, pub{score, free})
			return nil
		},
		Timeout: time.Second,
		Log:     slog.New(slog.DiscardHandler),
	}.Run(ctx)
	want := []pub{{92, 3}, {60, 3}}
	if calls != 3 || len(pubs) != len(want) || pubs[0] != want[0] || pubs[1] != want[1] {
		t.Fatalf("published %v in %d calls, want %v in 3", pubs, calls, want)
	}
}
