package job_test

import (
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/job/internal/schedule"
)

// TestJitterNeverMovesAFirePastEnd: end 10:00:00 with a 50 s jitter — the
// last fire is at 10:00:00 at the latest, never at 10:00:05 (issue 40).
func TestJitterNeverMovesAFirePastEnd(t *testing.T) {
	for day := 1; day <= 20; day++ {
		end := time.Date(2027, 3, day, 10, 0, 0, 0, time.UTC)
		s := mustSchedule(t, job.Config{Name: "jittered", Cron: "0 */10 * * * *", TimeZone: "UTC",
			End: end, Jitter: 50 * time.Second})
		fires := firesBetween(s, end.Add(-time.Hour+time.Minute), end.Add(time.Hour))
		if len(fires) != 6 {
			t.Fatalf("end %v: %d fires in the hour before it, want 6: %v", end, len(fires), fires)
		}
		if last := fires[len(fires)-1]; last.After(end) {
			t.Fatalf("end %v: a fire at %v, after the end", end, last)
		}
	}
}

// TestEveryFiresOnOnePhaseEverywhere: "@every 10s" fires on the same times
// on instances started at different moments — multiples of the period
// since the epoch, or since the job's start when it has one — so that a
// fire's time (FireTime, its records, failover) agrees across instances.
func TestEveryFiresOnOnePhaseEverywhere(t *testing.T) {
	noon := time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)
	s := mustSchedule(t, job.Config{Name: "every", Cron: "@every 10s"})
	for _, started := range []time.Duration{3 * time.Second, 6 * time.Second, 9*time.Second + 999*time.Millisecond} {
		first := s.Next(noon.Add(started))
		if want := noon.Add(10 * time.Second); !first.Equal(want) {
			t.Errorf("an instance started at %v fires first at %v, want %v", noon.Add(started), first, want)
		}
		if next := s.Next(first); !next.Equal(first.Add(10 * time.Second)) {
			t.Errorf("after %v: %v", first, next)
		}
	}
	// With a start, the period counts from it.
	start := noon.Add(7 * time.Second)
	ss := mustSchedule(t, job.Config{Name: "every", Cron: "@every 10s", Start: start})
	for _, from := range []time.Time{noon, noon.Add(8 * time.Second), noon.Add(12 * time.Second)} {
		got := firesBetween(ss, from, noon.Add(30*time.Second))
		want := []time.Time{start, start.Add(10 * time.Second), start.Add(20 * time.Second)}
		for len(want) > 0 && !want[0].After(from) {
			want = want[1:]
		}
		if len(got) != len(want) || (len(got) > 0 && !got[0].Equal(want[0])) {
			t.Errorf("from %v: fires %v, want %v", from, got, want)
		}
	}
}

// TestCalendarLooksPastTheCronsFiveYears: robfig/cron gives up after five
// years without a fire; 29 February skips 2100, eight years.
func TestCalendarLooksPastTheCronsFiveYears(t *testing.T) {
	c := job.Config{Name: "leap", Cron: "0 0 0 29 2 *", TimeZone: "UTC", ShardingTotalCount: 1}
	n, err := c.NextFireAfter(time.Date(2096, 3, 1, 0, 0, 0, 0, time.UTC))
	if want := time.Date(2104, 2, 29, 0, 0, 0, 0, time.UTC); err != nil || !n.Equal(want) {
		t.Fatalf("next fire after 2096-03-01: %v, %v; want %v", n, err, want)
	}
}

// TestScheduleHorizonIsTheSearchs: ScheduleHorizonYears says how far the
// search of package schedule looks.
func TestScheduleHorizonIsTheSearchs(t *testing.T) {
	if job.ScheduleHorizonYears != schedule.HorizonYears {
		t.Fatalf("ScheduleHorizonYears %d, the search's horizon %d", job.ScheduleHorizonYears, schedule.HorizonYears)
	}
}
