package job

import (
	"testing"
	"time"
)

func TestLoadScore(t *testing.T) {
	for _, tt := range []struct {
		s           LoadSample
		free, slots int
		want        float64
	}{
		{LoadSample{IdleCPU: 1, FreeMemory: 1}, 4, 4, 100},
		{LoadSample{}, 0, 4, 0},
		{LoadSample{IdleCPU: 0.5, FreeMemory: 0.5}, 2, 4, 50},
		{LoadSample{IdleCPU: 0.9, FreeMemory: 1}, 1, 1, 93.6},
		{LoadSample{IdleCPU: 1, FreeMemory: 1}, -3, 4, 68}, // more running than slots: none free
		{LoadSample{IdleCPU: 2, FreeMemory: -1}, 1, 1, 96}, // out-of-range shares are clamped
		{LoadSample{IdleCPU: 1 / 3.0, FreeMemory: 0}, 0, 1, 21.33},
	} {
		if got := LoadScore(tt.s, tt.free, tt.slots); got != tt.want {
			t.Errorf("LoadScore(%+v, %d/%d) = %v, want %v", tt.s, tt.free, tt.slots, got, tt.want)
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

func TestProcSampler(t *testing.T) {
	p := newProcSampler()
	for range 2 {
		s, err := p.sample()
		if err != nil {
			t.Fatal(err)
		}
		if s.IdleCPU < 0 || s.IdleCPU > 1 || s.FreeMemory <= 0 || s.FreeMemory > 1 {
			t.Fatalf("sample out of range: %+v", s)
		}
	}
}
