package fireplan

import (
	"slices"
	"time"
)

// MaxSpans bounds the runs of covered fires an item's completed record
// keeps: the newest ones, which are what owed runs ask about.
const MaxSpans = 16

// Cover is what an item's completed record says ran: runs of covered fires,
// oldest first, none adjacent to the next. Every span is a fact — some
// execution covered those fires — so the union of two covers is true too;
// what a cover does not list is not known to have run. Zero when nothing is
// recorded.
type Cover struct{ spans []Span }

// Through is the latest covered fire (zero if none).
func (c Cover) Through() time.Time {
	if len(c.spans) == 0 {
		return time.Time{}
	}
	return c.spans[len(c.spans)-1].Last
}

// IsZero reports whether nothing is recorded.
func (c Cover) IsZero() bool { return len(c.spans) == 0 }

// With returns c plus the fires first through last, merging runs that
// overlap or follow each other in sched, and keeping the newest MaxSpans.
func (c Cover) With(sched Schedule, first, last time.Time) Cover {
	if first.IsZero() || last.Before(first) {
		return c
	}
	all := make([]Span, 0, len(c.spans)+1) // c's spans are shared: a copy
	all = append(all, c.spans...)
	all = append(all, Span{first, last})
	slices.SortFunc(all, func(a, b Span) int { return a.First.Compare(b.First) })
	out := all[:1]
	for _, s := range all[1:] {
		prev := &out[len(out)-1]
		if !s.First.After(sched.Next(prev.Last)) { // overlaps or follows
			if s.Last.After(prev.Last) {
				prev.Last = s.Last
			}
			continue
		}
		out = append(out, s)
	}
	if len(out) > MaxSpans {
		out = out[len(out)-MaxSpans:]
	}
	return Cover{spans: out}
}

// Owed splits a debt of the fires since through upTo by what c covers: run
// is the first stretch of consecutive fires not covered (zero first when
// every fire is), and rest is the first uncovered fire after that stretch,
// if any up to upTo, which stays Owed.
func (c Cover) Owed(sched Schedule, since, upTo time.Time) (first, last, rest time.Time) {
	first = c.UncoveredFrom(sched, since)
	if first.IsZero() || first.After(upTo) {
		return time.Time{}, time.Time{}, time.Time{}
	}
	last = upTo
	for _, s := range c.spans {
		if s.First.After(first) {
			if p := Prev(sched, s.First.Add(-time.Millisecond)); p.Before(last) {
				last = p
			}
			break
		}
	}
	if last.Before(upTo) {
		if r := c.UncoveredFrom(sched, sched.Next(last)); !r.IsZero() && !r.After(upTo) {
			rest = r
		}
	}
	return first, last, rest
}

// UncoveredFrom is the first fire at or after t that c does not cover.
func (c Cover) UncoveredFrom(sched Schedule, t time.Time) time.Time {
	for _, s := range c.spans {
		if t.Before(s.First) {
			return t
		}
		if !t.After(s.Last) {
			t = sched.Next(s.Last)
			if t.IsZero() {
				return t
			}
		}
	}
	return t
}

// Union returns c plus every fire o covers.
func (c Cover) Union(sched Schedule, o Cover) Cover {
	for _, s := range o.spans {
		c = c.With(sched, s.First, s.Last)
	}
	return c
}

// Ran is c as a completed record stores it: [first, last] in Unix
// milliseconds.
func (c Cover) Ran() [][2]int64 {
	out := make([][2]int64, len(c.spans))
	for i, s := range c.spans {
		out[i] = [2]int64{s.First.UnixMilli(), s.Last.UnixMilli()}
	}
	return out
}

// Spans returns c's runs of covered fires, oldest first. The slice is c's
// own: callers must not change it.
func (c Cover) Spans() []Span { return c.spans }

// CoverOf returns the cover of the runs spans, in any order; those not
// well formed (no first fire, or a last before it) are left out.
func CoverOf(spans ...Span) Cover {
	c := Cover{}
	for _, s := range spans {
		if !s.First.IsZero() && !s.Last.Before(s.First) {
			c.spans = append(c.spans, s)
		}
	}
	slices.SortFunc(c.spans, func(a, b Span) int { return a.First.Compare(b.First) })
	return c
}
