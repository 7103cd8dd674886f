package job

import (
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/internal/parallel"
)

// Whether the previous owner of an item gained at this fire ran the fire
// already, so that it does not run twice: ranBefore sorts the items by
// their records as the fire read them, and recheckUnrecorded reads again,
// once the fire's marks are made, those that had none.

// ranBefore sorts the items newly held for the fire at (fresh, see
// inheritedGaps) by what their records, just read, say of that fire: ran
// holds those whose record already covers it — the item's previous owner
// ran this very fire before a reshard moved the item here, and running it
// again would run one fire twice — and known the records of the others,
// which the fire's marking transaction checks: a previous owner that
// completes the fire between the read and the mark changes the record,
// and the item then runs as a make-up run, which reads it (see marks.Outcomes.RecordChanged).
//
// An item gained at an earlier fire is in ran too when its record, as read
// since (the gain's, a make-up run's), lists this fire (records.Cache.RanAhead):
// the previous owner may have run fires ahead of this instance — which a
// stall or a slow registry held up — and not only the fire it was gained
// at. What was read then is reused: a steady fire, which finds no such
// record, reads nothing and takes no lock for it.
func (r *runner) ranBefore(cfg *spec, at time.Time, fresh []int) (ran map[int]bool, known map[int]record, unrecorded []int) {
	if cfg.Unmonitored || len(fresh) == 0 && !r.records.ReadAhead() {
		return nil, nil, nil
	}
	sched, _, err := cfg.Schedule()
	if err != nil {
		return nil, nil, nil
	}
	ran = r.records.RanAhead(sched, at)
	for _, it := range fresh {
		if ran[it] {
			continue
		}
		rec, ok := r.records.Lookup(it)
		if !ok {
			continue // not read: the fire runs it, as before the check
		}
		if !rec.UncoveredFrom(sched, at).Equal(at) {
			if ran == nil {
				ran = map[int]bool{}
			}
			ran[it] = true
			continue
		}
		if rec.Versioned {
			if known == nil {
				known = map[int]record{}
			}
			known[it] = rec
		} else {
			// No record yet: no transaction can check that none is
			// written before this fire's mark, and the previous owner
			// may be completing this very fire (a job's first fires, as
			// a second instance joins), writing the record and deleting
			// its mark at once. The fire reads it again once its mark
			// is made (recheckUnrecorded).
			unrecorded = append(unrecorded, it)
		}
	}
	return ran, known, unrecorded
}

// recheckUnrecorded reads again, now that f's marks are made, the records
// of f's items that had none when the fire read them (see ranBefore), or
// whose mark another run held when the fire marked them (fire.recheck),
// and returns f's items without those whose record now lists this fire:
// another run stood for it, and its completion (which writes the record
// and deletes that run's mark at once) came between the read and the mark.
// They are released unrun; their marks stay held here. An item whose
// record cannot be read runs.
func (r *runner) recheckUnrecorded(f *fire) []int {
	sched, _, err := f.cfg.Schedule()
	if err != nil {
		return f.items
	}
	unrecorded := make(map[int]bool, len(f.unrecorded))
	for _, it := range f.unrecorded {
		unrecorded[it] = true
	}
	var check []int
	for _, it := range f.items {
		if unrecorded[it] {
			check = append(check, it)
		}
	}
	if len(check) == 0 {
		return f.items
	}
	ctx, cancel := r.coordCtx(f.sess)
	defer cancel()
	recs := make([]record, len(check))
	errs := make([]error, len(check))
	parallel.Each(len(check), 32, func(i int) { recs[i], errs[i] = r.readRecord(ctx, check[i]) })
	ranThere := map[int]bool{}
	for i, it := range check {
		if errs[i] != nil {
			continue
		}
		r.records.Read(it, recs[i])
		if !recs[i].UncoveredFrom(sched, f.at).Equal(f.at) {
			ranThere[it] = true
		}
	}
	if len(ranThere) == 0 {
		return f.items
	}
	keep := make([]int, 0, len(f.items)-len(ranThere))
	var gone []int
	for _, it := range f.items {
		if ranThere[it] {
			gone = append(gone, it)
		} else {
			keep = append(keep, it)
		}
	}
	r.log.Info("items gained at this fire ran it on their previous owner while they were marked here", "items", layout.FormatItems(gone), "fire", f.at)
	r.release(gone)
	return keep
}
