package schedule

import (
	"strings"
	"testing"
	"time"
)

func TestParseTime(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip(err)
	}
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"2026-12-01T08:00:00Z", time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)},
		{" 2026-12-01T08:00:00+05:00 ", time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)},
		{"2026-12-01T08:00:00", time.Date(2026, 12, 1, 8, 0, 0, 0, berlin)},
		{"2026-12-01 08:00:00", time.Date(2026, 12, 1, 8, 0, 0, 0, berlin)},
		{"2026-12-01", time.Date(2026, 12, 1, 0, 0, 0, 0, berlin)},
	} {
		got, err := ParseTime(tc.in, berlin)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "tomorrow", "2026-12-01T25:00:00", "01/12/2026"} {
		if _, err := ParseTime(in, berlin); err == nil || !strings.Contains(err.Error(), "is not a time such as") {
			t.Errorf("ParseTime(%q): %v, want a refusal", in, err)
		}
	}
}

func TestCountFires(t *testing.T) {
	e := Every{Period: time.Minute}
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name        string
		since, stop time.Time
		want        int
	}{
		{"up to, not including, stop", t0, t0.Add(5 * time.Minute), 5},
		{"stop just after a fire", t0, t0.Add(5*time.Minute + time.Nanosecond), 6},
		{"stop at since", t0, t0, 0},
		{"no since", time.Time{}, t0, 0},
		{"no stop: bounded", t0, time.Time{}, MaxCounted},
	} {
		if got := CountFires(e, tc.since, tc.stop); got != tc.want {
			t.Errorf("%s: CountFires = %d, want %d", tc.name, got, tc.want)
		}
	}
}
