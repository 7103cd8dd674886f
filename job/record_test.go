package job

import (
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

func TestCoverArithmetic(t *testing.T) {
	sched, err := cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow).Parse("* * * * * *")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

	var c cover
	c = c.with(sched, at(10), at(20))
	c = c.with(sched, at(21), at(22)) // follows: one span
	c = c.with(sched, at(24), at(30)) // a hole at 23
	if len(c.spans) != 2 || !c.spans[0].first.Equal(at(10)) || !c.spans[0].last.Equal(at(22)) || !c.spans[1].first.Equal(at(24)) {
		t.Fatalf("spans %v", c.spans)
	}
	if !c.through().Equal(at(30)) {
		t.Errorf("through %v", c.through())
	}

	for _, tc := range []struct {
		name              string
		since, upTo       int
		first, last, rest int // -1: zero
	}{
		{"the hole only", 5, 35, 5, 9, 23},
		{"a debt inside the record's hole", 23, 30, 23, 23, -1},
		{"a debt over the hole and past the record", 15, 35, 23, 23, 31},
		{"a debt after the record", 31, 35, 31, 35, -1},
		{"every fire covered", 12, 20, -1, -1, -1},
		{"fires before the record are not known to have run", 1, 3, 1, 3, -1},
	} {
		first, last, rest := c.owed(sched, at(tc.since), at(tc.upTo))
		want := func(s int) time.Time {
			if s < 0 {
				return time.Time{}
			}
			return at(s)
		}
		if !first.Equal(want(tc.first)) || !last.Equal(want(tc.last)) || !rest.Equal(want(tc.rest)) {
			t.Errorf("%s: owed(%d, %d) = %v, %v, %v; want %d, %d, %d", tc.name, tc.since, tc.upTo, first.Sub(t0), last.Sub(t0), rest.Sub(t0), tc.first, tc.last, tc.rest)
		}
	}

	// Oldest spans go first past maxSpans.
	var many cover
	for i := range maxSpans + 3 {
		many = many.with(sched, at(100+2*i), at(100+2*i))
	}
	if len(many.spans) != maxSpans || !many.spans[0].first.Equal(at(106)) {
		t.Errorf("kept %d spans from %v", len(many.spans), many.spans[0].first.Sub(t0))
	}

	// A record written before spans existed reads as one span.
	old := coverOf(completedMark{Fire: at(30).UnixMilli(), Floor: at(20).UnixMilli()})
	if len(old.spans) != 1 || !old.spans[0].first.Equal(at(20)) || !old.spans[0].last.Equal(at(30)) {
		t.Errorf("legacy record: %v", old.spans)
	}
}
