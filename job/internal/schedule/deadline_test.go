package schedule

import (
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

func TestDeadline(t *testing.T) {
	sched, cerr := ParseCron("*/10 * * * * *", time.UTC, time.Second) // every 10 s
	if cerr != nil {
		t.Fatal(cerr)
	}
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	var zero time.Time
	// now 100, deadline 35 s: the cutoff is 65, the first fire within it 70.
	dl := NewDeadline(sched, at(100), 35*time.Second)
	for _, tc := range []struct {
		name                    string
		since, through, mayHave time.Time
		want                    Expiry
	}{
		{"within", at(70), at(100), zero, Expiry{Within: true}},
		{"older fires expire, the run starts within", at(30), at(100), zero, Expiry{From: at(70), Expired: 4}},
		{"every fire expired", at(20), at(50), zero, Expiry{Settle: true, Expired: 4}},
		{"some may have run: dropped, not expired", at(30), at(100), at(40), Expiry{From: at(70), Expired: 2, MayHaveRun: 2}},
		{"all may have run", at(30), at(100), at(90), Expiry{From: at(70), MayHaveRun: 4}},
		{"settled, partly run", at(20), at(50), at(30), Expiry{Settle: true, Expired: 2, MayHaveRun: 2}},
	} {
		if got := dl.Item(tc.since, tc.through, tc.mayHave); got != tc.want {
			t.Errorf("%s: Item(%v, %v, %v) = %+v, want %+v", tc.name, tc.since.Sub(t0), tc.through.Sub(t0), tc.mayHave, got, tc.want)
		}
	}
	// A schedule that has ended: nothing is within.
	ended := NewDeadline(cron.Schedule(endedSchedule{}), at(100), time.Second)
	if got := ended.Item(at(30), at(40), zero); !got.Settle {
		t.Errorf("an ended schedule: %+v, want settled", got)
	}
}

// endedSchedule has no fire left.
type endedSchedule struct{}

func (endedSchedule) Next(time.Time) time.Time { return time.Time{} }
