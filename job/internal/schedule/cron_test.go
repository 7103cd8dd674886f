package schedule

import (
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the tests name IANA zones; do not depend on the host's database
)

func TestParseCronRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, spec, detail, hint string
	}{
		{"a zone prefix", "TZ=UTC 0 * * * * *", "time zone prefixes are not supported", "set timeZone instead"},
		{"a CRON_TZ prefix", "CRON_TZ=UTC 0 * * * * *", "time zone prefixes are not supported", "set timeZone instead"},
		{"five fields", "*/5 * * * *", "expected exactly 6 fields", "six fields are needed"},
		{"a field of nothing", ", * * * * *", "never fires: its seconds field matches no value", ""},
		{"a period under the minimum", "@every 500ms", "the period must be a whole number of seconds, at least 1s", ""},
		{"a fraction of a second", "@every 1500ms", "the period must be a whole number of seconds, at least 1s", ""},
		{"no such descriptor", "@fortnightly", "unrecognized descriptor", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseCron(tc.spec, time.UTC, time.Second)
			if err == nil {
				t.Fatalf("ParseCron(%q) = %T, want an error", tc.spec, s)
			}
			if !strings.Contains(err.Detail, tc.detail) || !strings.Contains(err.Hint, tc.hint) || (tc.hint == "" && err.Hint != "") {
				t.Errorf("ParseCron(%q): detail %q, hint %q; want %q, %q", tc.spec, err.Detail, err.Hint, tc.detail, tc.hint)
			}
		})
	}
}

func TestParseCronAppliesTheZone(t *testing.T) {
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Skip(err)
	}
	s, cerr := ParseCron("0 0 9 * * *", shanghai, time.Second)
	if cerr != nil {
		t.Fatal(cerr.Detail)
	}
	from := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	if got, want := s.Next(from), time.Date(2024, 1, 1, 1, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("Next(%v) = %v, want %v", from, got, want)
	}
}

// TestParseCronOnceWhenClocksFallBack: a cron at set hours fires once at a
// wall-clock time that happens twice; one every hour keeps both.
func TestParseCronOnceWhenClocksFallBack(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip(err)
	}
	fires := func(spec string, from time.Time, n int) []string {
		s, cerr := ParseCron(spec, ny, time.Second)
		if cerr != nil {
			t.Fatal(cerr.Detail)
		}
		var out []string
		for at := from; len(out) < n; {
			at = s.Next(at)
			out = append(out, at.UTC().Format("01-02 15:04"))
		}
		return out
	}
	for _, tc := range []struct {
		spec string
		from time.Time
		want string
	}{
		{"0 30 1 * * *", time.Date(2026, 10, 31, 12, 0, 0, 0, ny), "[11-01 05:30 11-02 06:30]"},
		{"0 */30 * * * *", time.Date(2026, 11, 1, 0, 45, 0, 0, ny), "[11-01 05:00 11-01 05:30 11-01 06:00 11-01 06:30]"},
		{"0 30 2 * * *", time.Date(2026, 3, 7, 12, 0, 0, 0, ny), "[03-09 06:30 03-10 06:30]"},
	} {
		got := fires(tc.spec, tc.from, strings.Count(tc.want, ":"))
		if s := "[" + strings.Join(got, " ") + "]"; s != tc.want {
			t.Errorf("%q from %v: %s, want %s", tc.spec, tc.from, s, tc.want)
		}
	}
}

// TestEveryCountsFromItsPhase: whole periods after the phase (the epoch
// when unset), before the phase too.
func TestEveryCountsFromItsPhase(t *testing.T) {
	noon := time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)
	phase := noon.Add(7 * time.Second)
	for _, tc := range []struct {
		e        Every
		at, want time.Time
	}{
		{Every{Period: 10 * time.Second}, noon.Add(3 * time.Second), noon.Add(10 * time.Second)},
		{Every{Period: 10 * time.Second}, noon, noon.Add(10 * time.Second)},
		{Every{Period: 10 * time.Second, Phase: phase}, noon, phase},
		{Every{Period: 10 * time.Second, Phase: phase}, phase, phase.Add(10 * time.Second)},
		{Every{Period: 10 * time.Second, Phase: phase}, phase.Add(-time.Nanosecond), phase},
		{Every{Period: 10 * time.Second, Phase: phase}, phase.Add(-10 * time.Second), phase},
		{Every{Period: 10 * time.Second, Phase: phase}, phase.Add(-11 * time.Second), phase.Add(-10 * time.Second)},
	} {
		if got := tc.e.Next(tc.at); !got.Equal(tc.want) {
			t.Errorf("%+v.Next(%v) = %v, want %v", tc.e, tc.at, got, tc.want)
		}
	}
	s, err := ParseCron("@every 5s", time.UTC, time.Second)
	if err != nil {
		t.Fatal(err.Detail)
	}
	if e, ok := s.(Every); !ok || e.Period != 5*time.Second {
		t.Errorf(`ParseCron("@every 5s") = %#v, want an Every of 5s`, s)
	}
}

func TestCronWeekdays(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want string // the weekdays it fires on
	}{
		{"0 0 9 * * *", "sun mon tue wed thu fri sat"},
		{"0 0 9 * * mon-fri", "mon tue wed thu fri"},
		{"0 0 9 ? * sat", "sat"},
		{"0 0 0 13 * *", "sun mon tue wed thu fri sat"},   // the 13th falls on every weekday
		{"0 0 0 13 * fri", "sun mon tue wed thu fri sat"}, // either field: every 13th
		{"0 0 0 30 2 sun", "sun"},                         // 30 February is no date
		{"0 0 0 29 2 *", "sun mon tue wed thu fri sat"},
		{"@every 1h", "sun mon tue wed thu fri sat"},
	} {
		s, err := ParseCron(tc.spec, time.UTC, time.Second)
		if err != nil {
			t.Fatalf("%q: %s", tc.spec, err.Detail)
		}
		wd := cronWeekdays(s)
		var got []string
		for d := range 7 {
			if wd[d] {
				got = append(got, shortWeekday(time.Weekday(d)))
			}
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%q fires on %v, want %s", tc.spec, got, tc.want)
		}
	}
}
