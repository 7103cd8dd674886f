package fireplan

import "time"

// What one run of a fire's items stands for, read from the facts the fire
// gathered as plain values: the fires its items start at, and what their
// previous owner may have run already.

// FireOf is the fire item's run starts at: its own in fires (a make-up
// run since an earlier debt), else the fire's, at.
func FireOf(fires map[int]time.Time, at time.Time, item int) time.Time {
	if f, ok := fires[item]; ok {
		return f
	}
	return at
}

// Earliest is the earliest fire the runs of items start at (FireOf), at
// when none starts earlier.
func Earliest(fires map[int]time.Time, at time.Time, items []int) time.Time {
	first := at
	for _, it := range items {
		if f := FireOf(fires, at, it); f.Before(first) {
			first = f
		}
	}
	return first
}

// MayHaveRunThrough is the latest of the fires at through through that
// item's run stands for and that may have run already (zero: none), given
// mayHaveRun, the latest fire each item's previous owner may have started
// (a failover run's; nil for other runs).
func MayHaveRunThrough(mayHaveRun map[int]time.Time, item int, at, through time.Time) time.Time {
	t, ok := mayHaveRun[item]
	if !ok {
		return time.Time{}
	}
	if t.After(through) {
		t = through
	}
	if t.Before(at) {
		return time.Time{}
	}
	return t
}

// RangeMayHaveRunThrough is the latest fire any item of run, standing for
// its fire through through, may have run already (MayHaveRunThrough): a
// range is told as much as its most doubtful item.
func RangeMayHaveRunThrough(mayHaveRun map[int]time.Time, run ItemRun, through time.Time) time.Time {
	var t time.Time
	for it := run.First; it <= run.Last && len(mayHaveRun) > 0; it++ {
		if m := MayHaveRunThrough(mayHaveRun, it, run.Fire, through); m.After(t) {
			t = m
		}
	}
	return t
}
