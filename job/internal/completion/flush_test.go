package completion

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job/internal/journal"
)

// recordInterval: the job's own interval, else the scheduler's, else the
// journal's, journalled; none for an unmonitored job or while a dependent
// awaits the records.
func TestRecordInterval(t *testing.T) {
	j := journal.New(nil, "p", slog.New(slog.NewTextHandler(io.Discard, nil)))
	cases := []struct {
		name       string
		job        Job
		scheduler  time.Duration
		journal    *journal.Journal
		awaited    bool
		every      time.Duration
		journalled bool
	}{
		{name: "nothing opted into", every: 0},
		{name: "the job's own", job: Job{RecordInterval: time.Minute}, scheduler: time.Second, journal: j, every: time.Minute},
		{name: "the scheduler's", scheduler: time.Second, journal: j, every: time.Second},
		{name: "the journal's", journal: j, every: journal.RecordInterval, journalled: true},
		{name: "unmonitored", job: Job{Unmonitored: true, RecordInterval: time.Minute}, journal: j, every: 0},
		{name: "awaited by a dependent", job: Job{RecordInterval: time.Minute}, journal: j, awaited: true, every: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := testCompleter()
			s.Interval, s.Journal = tc.scheduler, tc.journal
			if tc.awaited {
				s.Records.SetAwaited()
			}
			every, journalled := s.recordInterval(tc.job)
			if every != tc.every || journalled != tc.journalled {
				t.Errorf("recordInterval = %v, %v; want %v, %v", every, journalled, tc.every, tc.journalled)
			}
		})
	}
}
