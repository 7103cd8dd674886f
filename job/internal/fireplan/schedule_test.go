package fireplan

import (
	"testing"
	"time"
)

// every fires at each multiple of d since the Unix epoch.
type every time.Duration

func (e every) Next(t time.Time) time.Time {
	d := time.Duration(e)
	return t.Truncate(d).Add(d)
}

// never has no fire.
type never struct{}

func (never) Next(time.Time) time.Time { return time.Time{} }

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func TestScheduleArithmetic(t *testing.T) {
	min := every(time.Minute)
	sec := every(time.Second)
	for _, c := range []struct {
		name string
		got  time.Time
		want time.Time
	}{
		{"Prev at a fire is that fire", Prev(min, at(60)), at(60)},
		{"Prev between fires", Prev(min, at(89)), at(60)},
		{"Prev of a schedule without fires", Prev(never{}, at(89)), time.Time{}},
		{"Due before the lead", Due(min, at(89), 5*time.Second), at(60)},
		{"Due within the lead is the next fire", Due(min, at(116), 5*time.Second), at(120)},
		{"Due with no lead", Due(min, at(119), 0), at(60)},
		{"DueAt takes the lead", DueAt(min, at(120), 5*time.Second), at(115)},
		{"DueAt: lead at most half the period", DueAt(sec, at(10), time.Second), at(10).Add(-500 * time.Millisecond)},
		{"MakeUpThrough reaches the latest due fire", MakeUpThrough(min, at(0), at(200), 0), at(180)},
		{"MakeUpThrough within the lead", MakeUpThrough(min, at(0), at(238), 5*time.Second), at(240)},
		{"MakeUpThrough never before since", MakeUpThrough(min, at(300), at(200), 0), at(300)},
		{"MakeUpThrough without a schedule", MakeUpThrough(nil, at(60), at(600), 0), at(60)},
	} {
		if !c.got.Equal(c.want) {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	if l := LeadOf(min, time.Time{}, time.Second); l != 0 {
		t.Errorf("LeadOf a zero fire = %v, want 0", l)
	}
	if l := LeadOf(never{}, at(60), time.Second); l != time.Second {
		t.Errorf("LeadOf the last fire = %v, want the whole lead", l)
	}
}
