// Package inherit reads what a fire inherits with the items this instance
// gained since its previous fire: the fires their previous owner left
// undone (gaps), the attempts of a gap's first fire that failed there,
// and, once the fire's marks are made, whether the previous owner ran the
// fire itself meanwhile.
//
// A previous owner that died (or lost its session) between fires leaves
// gaps: the reshard moves its items, and nothing else records the fires it
// owed. So a fire reads the registry for the items it did not hold without
// a break since its previous fire — only after a reshard or a new session —
// and what it reads replaces what this instance knew of those items'
// records, which another instance may have written meanwhile.
//
// It owns nothing: it reads the registry (the items' completed, misfire and
// retry nodes) and tells what it read to the parts that own it (the records
// cache, the ledger, the inherited gaps). It calls the rooms below it
// (records, reshard, marks, fireplan) and never the runner.
package inherit

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/internal/parallel"
	"github.com/shardjob/shardjob/job/internal/assume"
	"github.com/shardjob/shardjob/job/internal/book"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/marks"
	"github.com/shardjob/shardjob/job/internal/records"
	"github.com/shardjob/shardjob/job/internal/reshard"
	"github.com/shardjob/shardjob/regcenter"
)

// readers is how many of a fire's reads are in flight at once.
const readers = 32

// Reporter reports a node whose value does not decode (the runner's
// reporter of bad values).
type Reporter func(p string, st regcenter.Stat, data []byte, msg string, args ...any)

// Reader reads a job's inherited items for its fires. Its fields are set
// once, before its first use.
type Reader struct {
	RC      regcenter.Center
	Paths   layout.Job
	Records *records.Reader   // reads an item's completed node
	Known   *records.Cache    // the records as known here: what is read replaces it
	Owed    *book.Ledger      // a misfire node read is this instance's debt now
	Gaps    *assume.Inherited // the gaps found, and their failed attempts
	Log     *slog.Logger
	Report  Reporter
}

// Job is what the reads take of a job's config.
type Job struct {
	Schedule    fireplan.Schedule // nil: nothing is read
	SkipsMissed bool              // reads no debts and finds no gaps, but still reads the records
	Retries     bool              // a gap's failed attempts are read for its make-up run
	// Since is the earliest fire an item gained with neither record nor
	// debt owes (GainedSince; zero: none): a new job's item has no record
	// for a gap to be found by, yet the fires since the job began may have
	// passed with nobody running it.
	Since time.Time
}

// NewJob is how soon after a job's tree was made a reshard must give an
// item with no record for the item to owe every fire since the job began
// (GainedSince): the fires of a new job's first seconds can pass with the
// item in no assignment (a leader slow to make the first reshard, one
// that left it unplaced while every instance was starting) or with an
// owner behind in its fire order that found it gone. Later, an item with
// no record is one a change of the item count added, owing no fire from
// before it.
const NewJob = 10 * time.Minute

// Gain is what GainedSince takes of the reshard that gave an item: times
// on this instance's fire clock (the registry's, converted).
type Gain struct {
	Written time.Time // the sharding node's last write (its Mtime): the reshard
	Began   time.Time // the job's tree made (the epoch's Ctime); zero: unknown
	// Scheduled is when this instance began firing the job's current
	// schedule (its start, a change of cron, the job enabled); zero:
	// unknown. Fires before it were nobody's to run here, nor, if the job
	// was disabled, anybody's.
	Scheduled time.Time
	// Young reports a reshard within NewJob of the tree's making, as the
	// registry's own clock tells it (no conversion).
	Young bool
}

// GainedSince is the earliest fire before at that an item with no record
// owes when the reshard g gave it to this instance: for a young job
// (Gain.Young), the job's first fire, the first after its tree was made
// and after this instance began firing its schedule — nobody may have run
// any fire of it; otherwise the latest fire at or before the reshard (one
// in flight on a previous owner behind in its fire order can have found
// the item gone once it read), no more than two fires before at, the
// registry's clock not being this instance's. Never a fire before the job
// began; zero when the reshard is unknown, or owes nothing before at.
// Owing a fire the previous owner did run costs nothing: the make-up run,
// narrowed by the record once marked, does not run it again.
func GainedSince(s fireplan.Schedule, at time.Time, g Gain) time.Time {
	if s == nil || g.Written.IsZero() {
		return time.Time{}
	}
	var since time.Time
	if first := later(g.Began, g.Scheduled); g.Young && !first.IsZero() {
		since = s.Next(first)
	} else {
		since = fireplan.Prev(s, g.Written)
		if !g.Began.IsZero() && (since.IsZero() || since.Before(g.Began)) {
			since = s.Next(g.Began)
		}
		before := fireplan.Prev(s, at.Add(-time.Millisecond))
		if since.Before(fireplan.Prev(s, before.Add(-time.Millisecond))) {
			return time.Time{}
		}
	}
	if since.IsZero() || !since.Before(at) {
		return time.Time{}
	}
	return since
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Read reads the records and debts of fresh, the items of the fire at
// that this instance did not hold throughout since its previous fire, and
// returns the earliest fire before at that each has not completed, where
// there is one. A job that drops missed fires reads no debts and finds no
// gaps, but still reads the records: the fire itself may have run already
// on the item's previous owner (records.Cache.RanBefore). Reads that fail
// are logged once for the lot (a context that ends fails every one of them
// alike), and their items have no gap.
func (rd *Reader) Read(ctx context.Context, j Job, at time.Time, fresh []int) (gaps map[int]time.Time) {
	if len(fresh) == 0 || j.Schedule == nil {
		return nil
	}
	before := fireplan.Prev(j.Schedule, at.Add(-time.Millisecond))
	if before.IsZero() {
		return nil
	}
	gained := j.Since
	if gained.After(before) {
		gained = time.Time{}
	}
	recs := make([]records.Record, len(fresh))
	debts := make([]time.Time, len(fresh))
	errs := make([]error, 2*len(fresh))
	reads := 2 * len(fresh)
	if j.SkipsMissed {
		reads = len(fresh)
	}
	parallel.Each(reads, readers, func(i int) {
		if i < len(fresh) {
			recs[i], errs[i] = rd.Records.Read(ctx, fresh[i], j.Schedule, rd.Known)
		} else {
			debts[i-len(fresh)], errs[i] = reshard.ReadDebt(ctx, rd.RC, rd.Paths, fresh[i-len(fresh)], rd.Report)
		}
	})
	var unread []int
	var firstErr error
	for i, it := range fresh {
		if err := errors.Join(errs[i], errs[len(fresh)+i]); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			unread = append(unread, it)
			continue
		}
		rd.Known.Read(it, recs[i])
		if !debts[i].IsZero() {
			rd.Owed.SetNode(it, true) // its debt is ours now: paid, the node goes
		}
		if j.SkipsMissed {
			continue
		}
		since := fireplan.GapSince(j.Schedule, before, recs[i].Through(), debts[i])
		if recs[i].Through().IsZero() && !gained.IsZero() && (since.IsZero() || gained.Before(since)) {
			// Never run, as far as any record says: the fires since the
			// reshard that gave it are owed, and the make-up run, narrowed
			// by the record once marked, runs those nobody ran.
			since = gained
		}
		if since.IsZero() {
			continue
		}
		if gaps == nil {
			gaps = map[int]time.Time{}
		}
		gaps[it] = since
		// The previous owner may have run the gap's fires through the one
		// before this fire, unrecorded (it crashed with failover off).
		rd.Gaps.Note(it, before)
	}
	if len(unread) > 0 {
		rd.Log.Warn("reading inherited items' records", "items", layout.FormatItems(unread), "count", len(unread), "err", firstErr)
	}
	if j.Retries && len(gaps) > 0 {
		rd.readFailed(ctx, gaps)
	}
	return gaps
}

// readFailed reads, for items gained with a gap, the attempts of the
// gap's first fire that failed on their previous owner before it waited
// to retry (its retry node: it crashed, or lost its session, during the
// wait), for the make-up run of the gap to continue the count. A count
// that cannot be read starts again.
func (rd *Reader) readFailed(ctx context.Context, gaps map[int]time.Time) {
	items := slices.Sorted(maps.Keys(gaps))
	counts := make([]int, len(items))
	errs := make([]error, len(items))
	parallel.Each(len(items), readers, func(i int) {
		counts[i], errs[i] = marks.ReadRetry(ctx, rd.RC, rd.Paths, items[i], gaps[items[i]], rd.Report)
	})
	for i, it := range items {
		if errs[i] != nil {
			rd.Log.Warn("reading an inherited item's retry count; its fire's attempts start again", "item", it, "err", errs[i])
		} else if counts[i] > 0 {
			rd.Gaps.NoteFailed(it, gaps[it], counts[i])
		}
	}
}

// Recheck reads again, once the marks of the fire at are made, the records
// of its items that had none when the fire read them, or whose mark
// another run held when the fire marked them (unrecorded), and returns the
// fire's items split: those to run, and those whose record now lists this
// fire — another run stood for it, and its completion (which writes the
// record and deletes that run's mark at once) came between the read and
// the mark. An item whose record cannot be read runs.
func (rd *Reader) Recheck(ctx context.Context, sched fireplan.Schedule, at time.Time, items, unrecorded []int) (keep, ranThere []int) {
	if len(unrecorded) == 0 || sched == nil {
		return items, nil
	}
	isUnrecorded := make(map[int]bool, len(unrecorded))
	for _, it := range unrecorded {
		isUnrecorded[it] = true
	}
	var check []int
	for _, it := range items {
		if isUnrecorded[it] {
			check = append(check, it)
		}
	}
	if len(check) == 0 {
		return items, nil
	}
	recs := make([]records.Record, len(check))
	errs := make([]error, len(check))
	parallel.Each(len(check), readers, func(i int) { recs[i], errs[i] = rd.Records.Read(ctx, check[i], sched, rd.Known) })
	ran := map[int]bool{}
	for i, it := range check {
		if errs[i] != nil {
			continue
		}
		rd.Known.Read(it, recs[i])
		if !recs[i].UncoveredFrom(sched, at).Equal(at) {
			ran[it] = true
		}
	}
	if len(ran) == 0 {
		return items, nil
	}
	keep = make([]int, 0, len(items)-len(ran))
	for _, it := range items {
		if ran[it] {
			ranThere = append(ranThere, it)
		} else {
			keep = append(keep, it)
		}
	}
	return keep, ranThere
}
