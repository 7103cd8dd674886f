package records

import (
	"time"

	"github.com/shardjob/shardjob/job/internal/fireplan"
)

// RanBefore sorts the items newly held for the fire at (fresh: gained at
// this fire) by what their records, as read, say of that fire: ran holds
// those whose record already covers it — the item's previous owner ran
// this very fire before a reshard moved the item here, and running it
// again would run one fire twice — and known the records of the others,
// which the fire's marking transaction checks: a previous owner that
// completes the fire between the read and the mark changes the record,
// and the item then runs as a make-up run, which reads it (see
// marks.Outcomes.RecordChanged). unrecorded holds the items that had no
// record: no transaction can check that none is written before this
// fire's mark, and the previous owner may be completing this very fire (a
// job's first fires, as a second instance joins), writing the record and
// deleting its mark at once; the fire reads them again once its mark is
// made.
//
// An item gained at an earlier fire is in ran too when its record, as read
// since (the gain's, a make-up run's), lists this fire (RanAhead): the
// previous owner may have run fires ahead of this instance — which a stall
// or a slow registry held up — and not only the fire it was gained at.
// What was read then is reused: a steady fire, which finds no such record,
// reads nothing and takes no lock for it.
func (c *Cache) RanBefore(sched fireplan.Schedule, at time.Time, fresh []int) (ran map[int]bool, known map[int]Record, unrecorded []int) {
	if len(fresh) == 0 && !c.ReadAhead() {
		return nil, nil, nil
	}
	ran = c.RanAhead(sched, at)
	for _, it := range fresh {
		if ran[it] {
			continue
		}
		rec, ok := c.Lookup(it)
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
				known = map[int]Record{}
			}
			known[it] = rec
		} else {
			unrecorded = append(unrecorded, it)
		}
	}
	return ran, known, unrecorded
}
