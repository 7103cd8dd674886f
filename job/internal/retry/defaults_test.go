package retry

import (
	"testing"
	"time"
)

func TestWithDefaults(t *testing.T) {
	for _, tc := range []struct {
		in, want Policy
	}{
		{Policy{}, Policy{}},
		{Policy{Backoff: time.Minute}, Policy{Backoff: time.Minute}}, // no attempts: nothing filled in
		{Policy{Attempts: 3}, Policy{Attempts: 3, Backoff: DefaultBackoff, MaxBackoff: DefaultMaxBackoff}},
		{Policy{Attempts: 3, MaxBackoff: 500 * time.Millisecond}, Policy{Attempts: 3, Backoff: 500 * time.Millisecond, MaxBackoff: 500 * time.Millisecond}},
		{Policy{Attempts: 3, Backoff: time.Minute}, Policy{Attempts: 3, Backoff: time.Minute, MaxBackoff: time.Minute}},
		{Policy{Attempts: 1, Backoff: 2 * time.Second, MaxBackoff: 10 * time.Second, Jitter: 0.5},
			Policy{Attempts: 1, Backoff: 2 * time.Second, MaxBackoff: 10 * time.Second, Jitter: 0.5}},
	} {
		if got := tc.in.WithDefaults(); got != tc.want {
			t.Errorf("%+v.WithDefaults() = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}
