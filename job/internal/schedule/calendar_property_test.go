package schedule

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// keptFires is what a calendar should keep of base's fires, found the
// slow way: every fire of base (at most a year of them, from before the
// window), each checked against the window, the days excluded, the limit
// counted from start, and the pause.
func keptFires(t *testing.T, spec string, c Calendar) []time.Time {
	t.Helper()
	base, err := ParseCron(spec, time.UTC, time.Second)
	if err != nil {
		t.Fatal(err.Detail)
	}
	x, _ := ParseExclude(c.Exclude)
	var kept []time.Time
	counted := 0
	for f := base.Next(c.Start.AddDate(0, 0, -1)); !f.After(c.End); f = base.Next(f) {
		if f.Before(c.Start) || x.excludes(f) {
			continue
		}
		if counted++; c.Limit > 0 && counted > c.Limit {
			break
		}
		if !f.Before(c.PausedUntil) {
			kept = append(kept, f)
		}
	}
	return kept
}

// TestCalendarPropertyKeepsWhatItShould: for calendars drawn at random,
// Next from any time is the first fire after it that the window, the days
// excluded, the limit and the pause keep; with a jitter, the fires keep
// that order, each delayed by less than the jitter and never past end.
func TestCalendarPropertyKeepsWhatItShould(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	day0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	weekdays := []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
	for i := range 120 {
		spec := []string{"0 0 */6 * * *", "0 30 9 * * mon-fri", "0 0 0 1,15 * *", "0 */20 * * * *"}[r.IntN(4)]
		c := Calendar{Name: "prop", Start: day0.Add(time.Duration(r.IntN(20*24)) * time.Hour)}
		c.End = c.Start.Add(time.Duration(r.IntN(40*24)) * time.Hour)
		if r.IntN(3) == 0 {
			c.PausedUntil = c.Start.Add(time.Duration(r.IntN(30*24)) * time.Hour)
		}
		if r.IntN(2) == 0 {
			c.Limit = 1 + r.IntN(40)
		}
		var excl []string
		for _, d := range r.Perm(7)[:r.IntN(4)] {
			excl = append(excl, weekdays[d])
		}
		for range r.IntN(3) {
			excl = append(excl, c.Start.AddDate(0, 0, r.IntN(30)).Format(time.DateOnly))
		}
		c.Exclude = strings.Join(excl, ",")
		want := keptFires(t, spec, c)

		base, _ := ParseCron(spec, time.UTC, time.Second)
		s := Apply(base, time.UTC, c)
		for range 20 {
			at := day0.Add(time.Duration(r.Int64N(int64(70 * 24 * time.Hour))))
			var exp time.Time
			for _, f := range want {
				if f.After(at) {
					exp = f
					break
				}
			}
			if got := s.Next(at); !got.Equal(exp) {
				t.Fatalf("case %d: %q with %+v: Next(%v) = %v, want %v", i, spec, c, at, got, exp)
			}
		}

		c.Jitter = time.Duration(1+r.IntN(3*3600)) * time.Second
		j := Apply(base, time.UTC, c)
		var prev time.Time
		k := 0
		for f := j.Next(c.Start.Add(-time.Hour)); !f.IsZero(); f = j.Next(f) {
			if k >= len(want) {
				t.Fatalf("case %d: jittered fire %v beyond the %d nominal ones", i, f, len(want))
			}
			n := want[k]
			if d := f.Sub(n); d < 0 || d >= c.Jitter || f.After(c.End) || !f.After(prev) {
				t.Fatalf("case %d: fire %v of nominal %v (jitter %v, end %v, previous %v)", i, f, n, c.Jitter, c.End, prev)
			}
			if got := j.Next(f.Add(-time.Millisecond)); !got.Equal(f) {
				t.Fatalf("case %d: Next just before the fire %v is %v", i, f, got)
			}
			prev = f
			k++
		}
		if k != len(want) {
			t.Fatalf("case %d: %d jittered fires, want %d", i, k, len(want))
		}
	}
}
