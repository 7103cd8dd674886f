package fireplan

import (
	"slices"
	"time"
)

// GapSince is the earliest fire, no later than before (the fire before the
// one firing now), that an item newly held here still owes, or zero when
// it owes none: the fire after the last one its record lists (done), when
// that is before before — nothing ran since —, or its previous owner's
// debt, when that is earlier. A record with nothing listed (done zero)
// and no debt owe nothing: the item never ran anywhere, and its first run
// is this fire.
func GapSince(s Schedule, before, done, debt time.Time) time.Time {
	var since time.Time
	if !done.IsZero() && done.Before(before) {
		since = s.Next(done) // nothing ran since done
	}
	if !debt.IsZero() && !debt.After(before) && (since.IsZero() || debt.Before(since)) {
		// An instance that owed the item a run left the debt behind (it
		// died, or a reshard moved the item): the make-up run runs what
		// of it the record does not list.
		since = debt
	}
	if since.IsZero() || since.After(before) {
		return time.Time{}
	}
	return since
}

// ItemRun is a run of consecutive items of one fire: First to Last, inclusive,
// standing for Fire.
type ItemRun struct {
	First, Last int
	Fire        time.Time
}

// Runs groups items, each of the fire fireOf gives it, into runs of
// consecutive items with the same fire, in item order.
func Runs(items []int, fireOf func(int) time.Time) []ItemRun {
	items = slices.Clone(items)
	slices.Sort(items)
	var out []ItemRun
	for _, it := range items {
		f := fireOf(it)
		if n := len(out); n > 0 && out[n-1].Last == it-1 && out[n-1].Fire.Equal(f) {
			out[n-1].Last = it
			continue
		}
		out = append(out, ItemRun{First: it, Last: it, Fire: f})
	}
	return out
}
