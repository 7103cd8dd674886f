package fireplan

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestCoverArithmetic(t *testing.T) {
	sched := every(time.Second)

	var c Cover
	c = c.With(sched, at(10), at(20))
	c = c.With(sched, at(21), at(22)) // follows: one span
	c = c.With(sched, at(24), at(30)) // a hole at 23
	if len(c.Spans()) != 2 || !c.Spans()[0].First.Equal(at(10)) || !c.Spans()[0].Last.Equal(at(22)) || !c.Spans()[1].First.Equal(at(24)) {
		t.Fatalf("spans %v", c.Spans())
	}
	if !c.Through().Equal(at(30)) {
		t.Errorf("through %v", c.Through())
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
		first, last, rest := c.Owed(sched, at(tc.since), at(tc.upTo))
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

	// Oldest spans go first past MaxSpans.
	var many Cover
	for i := range MaxSpans + 3 {
		many = many.With(sched, at(100+2*i), at(100+2*i))
	}
	if len(many.Spans()) != MaxSpans || !many.Spans()[0].First.Equal(at(106)) {
		t.Errorf("kept %d spans from %v", len(many.Spans()), many.Spans()[0].First.Sub(t0))
	}

}

// A cover answers as the set of fires its runs covered: With and Union add
// to the set, and Owed splits a debt into the first stretch of fires not in
// it and the first such fire after that stretch. Checked against a plain
// set over random runs of a per-second schedule (fewer than MaxSpans, so
// nothing is dropped for age).
func TestCoverProperties(t *testing.T) {
	sched := every(time.Second)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 5000 {
		var c, d Cover
		set := map[int]bool{}
		for range rng.IntN(5) {
			f := rng.IntN(40)
			l := f + rng.IntN(6)
			into := &c
			if rng.IntN(2) == 0 {
				into = &d
			}
			*into = into.With(sched, at(f), at(l))
			for s := f; s <= l; s++ {
				set[s] = true
			}
		}
		c = c.Union(sched, d)
		spans := c.Spans()
		for k := 1; k < len(spans); k++ {
			if !spans[k].First.After(sched.Next(spans[k-1].Last)) {
				t.Fatalf("case %d: spans %v touch or overlap", i, spans)
			}
		}
		for s := 0; s < 50; s++ {
			covered := false
			for _, sp := range spans {
				if !at(s).Before(sp.First) && !at(s).After(sp.Last) {
					covered = true
				}
			}
			if covered != set[s] {
				t.Fatalf("case %d: fire %d covered=%v, the runs say %v", i, s, covered, set[s])
			}
		}
		since := rng.IntN(50)
		upTo := since + rng.IntN(10)
		first, last, rest := c.Owed(sched, at(since), at(upTo))
		// The model: the first uncovered fire from since, its stretch,
		// and the next uncovered fire after the stretch, all up to upTo.
		wf, wl, wr := -1, -1, -1
		for s := since; s <= upTo; s++ {
			switch {
			case wf < 0 && !set[s]:
				wf, wl = s, s
			case wf >= 0 && wr < 0 && wl == s-1 && !set[s]:
				wl = s
			case wf >= 0 && wr < 0 && !set[s]:
				wr = s
			}
		}
		want := func(s int) time.Time {
			if s < 0 {
				return time.Time{}
			}
			return at(s)
		}
		if !first.Equal(want(wf)) || !last.Equal(want(wl)) || !rest.Equal(want(wr)) {
			t.Fatalf("case %d: Owed(%d, %d) of %v = %v %v %v, want %d %d %d", i, since, upTo, spans,
				first.Sub(t0), last.Sub(t0), rest.Sub(t0), wf, wl, wr)
		}
	}
}
