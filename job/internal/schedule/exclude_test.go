package schedule

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseExclude(t *testing.T) {
	sat := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	xmas := time.Date(2026, 12, 25, 12, 0, 0, 0, time.UTC) // a Friday
	for _, tc := range []struct {
		list     string
		excluded []time.Time
		kept     []time.Time
		problems string
	}{
		{"", nil, []time.Time{sat, xmas}, ""},
		{"  ", nil, []time.Time{sat, xmas}, ""},
		{"sat", []time.Time{sat}, []time.Time{xmas}, ""},
		{" Saturday , 2026-12-25", []time.Time{sat, xmas}, []time.Time{sat.AddDate(0, 0, 1)}, ""},
		{"THURS,fri", []time.Time{xmas, xmas.AddDate(0, 0, -1)}, []time.Time{sat}, ""},
		{"sat,,sun", []time.Time{sat}, nil, "entry 2 is empty"},
		{"sat,funday", []time.Time{sat}, nil, `entry "funday" is neither a weekday (mon..sun) nor a date (2006-01-02)`},
		{"2026-13-01", nil, nil, `entry "2026-13-01" is neither a weekday`},
		{strings.Repeat("sat,", MaxExcludeEntries) + "sun", nil, []time.Time{sat},
			fmt.Sprintf("has %d entries; at most %d are accepted", MaxExcludeEntries+1, MaxExcludeEntries)},
	} {
		x, problems := ParseExclude(tc.list)
		if got := strings.Join(problems, "; "); !strings.Contains(got, tc.problems) || (tc.problems == "" && got != "") {
			t.Errorf("ParseExclude(%.20q): problems %q, want %q", tc.list, got, tc.problems)
		}
		for _, d := range tc.excluded {
			if !x.excludes(d) {
				t.Errorf("ParseExclude(%.20q) keeps %v", tc.list, d.Format("Mon 2006-01-02"))
			}
		}
		for _, d := range tc.kept {
			if x.excludes(d) {
				t.Errorf("ParseExclude(%.20q) excludes %v", tc.list, d.Format("Mon 2006-01-02"))
			}
		}
	}
}

// TestExcludedDaysAreTheZones: a day is excluded in the time's own zone.
func TestExcludedDaysAreTheZones(t *testing.T) {
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Skip(err)
	}
	x, _ := ParseExclude("2026-12-25")
	at := time.Date(2026, 12, 24, 23, 30, 0, 0, time.UTC) // 07:30 on the 25th in Shanghai
	if x.excludes(at) || !x.excludes(at.In(shanghai)) {
		t.Errorf("%v: excluded in UTC %v, in Shanghai %v; want false, true", at, x.excludes(at), x.excludes(at.In(shanghai)))
	}
}
