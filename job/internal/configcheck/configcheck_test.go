package configcheck

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shardjob/shardjob/job/internal/retry"
	"github.com/shardjob/shardjob/job/internal/schedule"
)

// told collects the problems an Add is told, one line each:
// "key kind: subject: detail".
type told []string

func (t *told) add(key string, kind Kind, subject, detail string) {
	*t = append(*t, fmt.Sprintf("%s %d: %s: %s", key, kind, subject, detail))
}

// check runs f with an Add and returns what it was told.
func check(f func(Add)) []string {
	var t told
	f(t.add)
	return t
}

func TestChecks(t *testing.T) {
	utc := time.UTC
	hourly, err := cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow).Parse("0 0 * * * *")
	if err != nil {
		t.Fatal(err)
	}
	day := func(d int) time.Time { return time.Date(2026, 12, d, 0, 0, 0, 0, utc) }
	for _, tc := range []struct {
		name  string
		check func(Add)
		want  []string // substrings of each problem, in order
	}{
		{"name ok", func(a Add) { Name(a, "orders-sync") }, nil},
		{"name missing", func(a Add) { Name(a, "") }, []string{"name 1: name is required"}},
		{"name long", func(a Add) { Name(a, strings.Repeat("x", MaxNameLength+1)) }, []string{"longer than 128 characters"}},
		{"name chars", func(a Add) { Name(a, "a/b") }, []string{`name 1: name "a/b": may contain only`}},
		{"name reserved", func(a Add) { Name(a, ".x") }, []string{"is reserved"}},
		{"counts ok", func(a Add) { Counts(a, 3, 0) }, nil},
		{"counts bad", func(a Add) { Counts(a, 0, -1) }, []string{"shardingTotalCount 2: shardingTotalCount 0: must be between 1 and 10000",
			"itemsPerShard 2: itemsPerShard -1"}},
		{"misfire", func(a Add) { Policies(a, "sometimes", "", false) }, []string{`misfire "sometimes": must be "once" or "skip"`}},
		{"overlap disagrees", func(a Add) { Policies(a, MisfireOnce, OverlapSkip, false) }, []string{`disagrees with misfire "once"`}},
		{"overlap allow monitored", func(a Add) { Policies(a, "", OverlapAllow, false) }, []string{"needs monitorExecution: false"}},
		{"overlap allow unmonitored", func(a Add) { Policies(a, "", OverlapAllow, true) }, nil},
		{"overlap unknown", func(a Add) { Policies(a, "", "queue", false) }, []string{`must be "buffer-one", "skip", "replace" or "allow"`}},
		{"intervals", func(a Add) { Intervals(a, -1, time.Hour, time.Minute, false, time.Millisecond, -time.Second) }, []string{
			"timeout 0: timeout -1ns: must not be negative", "recordInterval 1h0m0s: must be between 0 (record every completion) and 1m0s",
			"maxTimeDiff 1ms: must be 0 (no check) or at least 1s", "reconcileInterval 0: reconcileInterval -1s: must not be negative"}},
		{"record unmonitored", func(a Add) { Intervals(a, 0, time.Second, time.Minute, true, 0, 0) }, []string{"an unmonitored job keeps no records"}},
		{"strategy", func(a Add) { Strategy(a, "9x") }, []string{"must be an identifier"}},
		{"calendar ok", func(a Add) {
			Calendar(a, schedule.Calendar{Start: day(1), End: day(2), Limit: 3}, time.Minute, "", hourly, utc)
		}, nil},
		{"calendar bad", func(a Add) {
			Calendar(a, schedule.Calendar{Start: day(2), End: day(1), Limit: MaxLimit + 1, Jitter: time.Microsecond}, time.Millisecond, "why", nil, utc)
		}, []string{"end 0: end 2026-12-01T00:00:00Z: is before start", "limit 100001: must be at most 100000",
			"jitter 1µs: must be 0 or at least 1ms", "startingDeadline 1ms: must be 0 (no deadline) or at least 1s",
			"pauseNote 0: pauseNote: is the note of a pause"}},
		{"limit without start", func(a Add) { Calendar(a, schedule.Calendar{Limit: 2}, 0, "", nil, utc) }, []string{"counts fires from start: set start too"}},
		{"calendar never fires", func(a Add) {
			Calendar(a, schedule.Calendar{Exclude: "mon,tue,wed,thu,fri,sat,sun"}, 0, "", hourly, utc)
		},
			[]string{"exclude 3: exclude"}},
		{"after ok", func(a Add) { After(a, "c", "a, b", []string{"a", "b"}, false, ParentRun, time.Minute) }, nil},
		{"after bad", func(a Add) { After(a, "c", "a,c,a,b/x", []string{"a", "c", "a", "b/x"}, true, "", 0) }, []string{
			`"a,c,a,b/x": names the job itself`, `names "a" twice`, `"b/x" is not a job name`, "an unmonitored job keeps no records"}},
		{"after policies alone", func(a Add) { After(a, "c", "", nil, false, "never", time.Second) }, []string{
			`must be "skip", "run" or "alert"`, "afterTimeout 1s: needs after"}},
		{"retry ok", func(a Add) {
			Retry(a, retry.Policy{Attempts: 3, Backoff: time.Second, MaxBackoff: time.Minute, Jitter: 0.2})
		}, nil},
		{"retry bad", func(a Add) {
			Retry(a, retry.Policy{Attempts: -1, Backoff: time.Minute, MaxBackoff: time.Second, Jitter: math.NaN()})
		}, []string{
			"retry.attempts -1", "retry.maxBackoff 1s: is shorter than retry.backoff 1m0s", "retry.jitter NaN"}},
		{"retry without attempts", func(a Add) { Retry(a, retry.Policy{Backoff: time.Second}) }, []string{"without attempts"}},
		{"alert bounds", func(a Add) { Alert(a, -time.Second, time.Millisecond, nil, time.Time{}) }, []string{
			"alert.late -1s: must not be negative", "alert.notRunFor 1ms: must be 0 (no alert) or at least 1s"}},
		{"alert gap", func(a Add) { Alert(a, 0, time.Minute, hourly, day(1)) }, []string{"is shorter than the 1h0m0s between two of the schedule's fires"}},
		{"alert gap ok", func(a Add) { Alert(a, 0, 2*time.Hour, hourly, day(1)) }, nil},
	} {
		got := check(tc.check)
		if len(got) != len(tc.want) {
			t.Errorf("%s: got %d problems %q, want %d", tc.name, len(got), got, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: problem %d is %q, want it to contain %q", tc.name, i, got[i], w)
			}
		}
	}
}

func TestItemParameters(t *testing.T) {
	for _, tc := range []struct {
		s        string
		total    int
		want     map[int]string
		problems []string
	}{
		{"", 3, map[int]string{}, nil},
		{"0=Beijing, 1 =Shanghai,2=", 3, map[int]string{0: "Beijing", 1: "Shanghai", 2: ""}, nil},
		{"7=x", 0, map[int]string{7: "x"}, nil},
		{"0=a,,x", 2, nil, []string{"entry 2 is empty", `entry "x" has no '='`}},
		{"a=1,-1=2", 2, nil, []string{`item "a" is not a non-negative integer`, `item "-1" is not`}},
		{"2=x", 2, nil, []string{`entry "2=x": item 2 is outside [0,2) given by shardingTotalCount`}},
		{"0=x", -1, nil, []string{`entry "0=x": item 0 is outside [0,shardingTotalCount)`}},
		{"1=a,1=b", 2, nil, []string{"item 1 is given more than once"}},
	} {
		got, problems := ItemParameters(tc.s, tc.total)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ItemParameters(%q, %d) = %v, want %v", tc.s, tc.total, got, tc.want)
		}
		if len(problems) != len(tc.problems) {
			t.Errorf("ItemParameters(%q, %d): problems %q, want %d", tc.s, tc.total, problems, len(tc.problems))
			continue
		}
		for i, w := range tc.problems {
			if !strings.Contains(problems[i], w) {
				t.Errorf("ItemParameters(%q): problem %q, want it to contain %q", tc.s, problems[i], w)
			}
		}
	}
}

func TestParentAndSchedule(t *testing.T) {
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	sched := Schedule{Cron: "0 * * * * *", TimeZone: "UTC", Calendar: schedule.Calendar{Name: "a", Start: start, Jitter: time.Second}}
	jittered := sched
	jittered.Calendar.Name, jittered.Calendar.Jitter = "b", 5*time.Second
	later := sched
	later.Calendar.Start = start.Add(time.Hour)
	for _, tc := range []struct {
		name           string
		parent         Job
		dependentSched Schedule
		want           string
	}{
		{"ok, jitter aside", Job{Name: "p", Schedule: sched}, jittered, ""},
		{"unmonitored", Job{Name: "p", Unmonitored: true, Schedule: sched}, sched, `job "p" is unmonitored`},
		{"behind", Job{Name: "p", RecordInterval: time.Second, Schedule: sched}, sched, "writes its records behind (recordInterval 1s)"},
		{"other start", Job{Name: "p", Schedule: sched}, later, `start "2026-12-01T00:00:00Z" there, "2026-12-01T01:00:00Z" here`},
	} {
		got := Parent(Job{Name: "d", Schedule: tc.dependentSched}, tc.parent)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: Parent = %q, want %q", tc.name, got, tc.want)
		}
	}
	if SameCalendar(sched.Calendar, jittered.Calendar) {
		t.Error("SameCalendar ignores the jitter; it reschedules the job")
	}
	if !SameCalendar(sched.Calendar, schedule.Calendar{Name: "other", Start: start, Jitter: time.Second}) {
		t.Error("SameCalendar compares the name")
	}
}

func TestLongestGap(t *testing.T) {
	p := cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		spec string
		want time.Duration
	}{
		{"0 */5 * * * *", 5 * time.Minute},
		{"0 0 9,17 * * *", 16 * time.Hour},
	} {
		s, err := p.Parse(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		if got := LongestGap(s, now, 32); got != tc.want {
			t.Errorf("LongestGap(%q) = %v, want %v", tc.spec, got, tc.want)
		}
	}
	if got := LongestGap(once(now.Add(time.Hour)), now, 32); got != 0 {
		t.Errorf("LongestGap of a single fire = %v, want 0", got)
	}
}

// once is a schedule with one fire.
type once time.Time

func (o once) Next(t time.Time) time.Time {
	if t.Before(time.Time(o)) {
		return time.Time(o)
	}
	return time.Time{}
}

func TestEnded(t *testing.T) {
	p := cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)
	hourly, _ := p.Parse("0 0 * * * *")
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	now := start.Add(10 * time.Hour)
	for _, tc := range []struct {
		name string
		cal  schedule.Calendar
		key  string // "": not ended
	}{
		{"no calendar", schedule.Calendar{}, ""},
		{"limit used up", schedule.Calendar{Start: start, Limit: 3}, "limit"},
		{"end passed", schedule.Calendar{End: start.Add(time.Hour)}, "end"},
		{"end ahead", schedule.Calendar{End: now.Add(2 * time.Hour)}, ""},
	} {
		e, ended := Ended(schedule.Apply(hourly, time.UTC, tc.cal), "0 0 * * * *", tc.cal, now)
		if ended != (tc.key != "") || e.Key != tc.key {
			t.Errorf("%s: Ended = %+v, %v; want key %q", tc.name, e, ended, tc.key)
		}
	}
}
