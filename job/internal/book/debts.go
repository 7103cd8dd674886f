package book

import (
	"sort"
	"time"

	"github.com/shardjob/shardjob/internal/lazymap"

	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/regcenter"
)

// NoteMisfire records that item missed the fire at, unless j drops missed
// fires.
func (b *Book) NoteMisfire(j Job, item int, at time.Time) {
	b.mu.Lock()
	b.noteMisfireLocked(j, item, at)
	b.mu.Unlock()
}

func (b *Book) noteMisfireLocked(j Job, item int, at time.Time) {
	if j.SkipsMissed {
		return
	}
	if b.owed.owe(item, at) {
		b.misfiresOwed.Add(1)
		b.log.Debug("run owed", "item", item, "since", at)
	}
}

// NoteUnrun notes as owed the fires of item's reserved run since at that
// will not start (its mark held by another run, or not made): since at
// through the latest fire its reservation stands for — a make-up run's
// through, not its first fire only. Call it before the item is released.
func (b *Book) NoteUnrun(j Job, item int, at time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.noteMisfireLocked(j, item, at)
	if e := b.runs.running[item]; e != nil && e.through.After(at) {
		b.noteMisfireLocked(j, item, e.through)
	}
}

// NoteCatchUp notes that item owes the fire at, which this instance let
// pass before a reshard gave it the item, and the fires since gap (zero:
// none), the earliest its record shows undone. The debt runs through at
// whatever comes before it: a run standing for the gap only — a failover
// run of the previous owner's fires, in flight here — settles the gap and
// leaves at owed.
func (b *Book) NoteCatchUp(j Job, item int, at, gap time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.noteMisfireLocked(j, item, at)
	if !gap.IsZero() && gap.Before(at) {
		b.noteMisfireLocked(j, item, gap)
	}
}

// noteOwesLocked notes the fires in o as owed by item.
func (b *Book) noteOwesLocked(j Job, item int, o fireplan.Owes) {
	for _, at := range o.All() {
		b.noteMisfireLocked(j, item, at)
	}
}

// NoteSuspendedMiss records the fire at, skipped while the connection was
// down (or not dispatched at all); a leave hands the ledger over and
// clears it in one step.
func (b *Book) NoteSuspendedMiss(at time.Time) {
	b.mu.Lock()
	b.owed.missWhileDown(at)
	b.mu.Unlock()
}

// TakeMissed returns and clears the earliest fire skipped here.
func (b *Book) TakeMissed() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.owed.takeMissed()
}

// Narrow is a make-up run's step for one item, run since since, whose
// completed record says c: the first and last fires to run and the first
// fire left owed (see fireplan.Cover.Owed), which it notes as a debt; the
// execution holding the item stands for no more than last. upTo is the
// latest fire the run stood for. With no schedule, the run is left as it
// is.
func (b *Book) Narrow(j Job, item int, since time.Time, c fireplan.Cover) (first, last, rest, upTo time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	upTo = since
	e := b.runs.running[item]
	if e != nil && e.through.After(upTo) {
		upTo = e.through
	}
	if j.Schedule == nil {
		return since, upTo, time.Time{}, upTo
	}
	first, last, rest = c.Owed(j.Schedule, since, upTo)
	if !first.IsZero() {
		if e != nil {
			e.through = last
		}
		if !rest.IsZero() {
			b.noteMisfireLocked(j, item, rest)
		}
	}
	return first, last, rest, upTo
}

// AbsorbDebts folds into a make-up run starting at at the debts this
// instance holds for its items since earlier fires: the run covers them
// too (from the earliest), and they are forgotten. A make-up run that left
// an earlier debt behind would record a later fire as completed, and the
// debt's run would then start after it: the fires between would be lost.
// It returns the items whose run starts earlier than at.
func (b *Book) AbsorbDebts(j Job, items []int, at time.Time) map[int]time.Time {
	fires := map[int]time.Time{}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, it := range items {
		since, owed := b.owed.Owed(it)
		if !owed {
			continue
		}
		// The run stands for the fires through the latest due when it
		// was reserved; a debt noted since (a fire that found it
		// reserved, while its marks were being written) is not its to
		// pay.
		through := at
		if e := b.runs.running[it]; e != nil && e.through.After(through) {
			through = e.through
		}
		if since.After(through) {
			continue
		}
		if since.Before(at) {
			fires[it] = since
		}
		if last := b.owed.LastOwed(it); last.After(through) && j.Schedule != nil {
			if next := j.Schedule.Next(through); !next.IsZero() && !next.After(last) {
				b.owed.owedFrom(it, next) // the fires after the run stay owed
				continue
			}
		}
		b.owed.forget(it)
	}
	return fires
}

// OweRemote notes that item missed the fire at because it runs elsewhere,
// and returns the start of its debt, whether this instance has written
// its misfire node, and whether a wait for its mark is set.
func (b *Book) OweRemote(j Job, item int, at time.Time) (since time.Time, haveNode, waiting bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.noteMisfireLocked(j, item, at)
	since, _ = b.owed.Owed(item)
	_, waiting = b.remoteWaits[item]
	return since, b.owed.HasNode(item), waiting
}

// TakeDebts reserves, grouped by the fire each owes since, the items owed
// a run that neither run here, nor were tried (it marks them), nor wait
// for a mark elsewhere, and takes their debts: for the runs the job owes.
// Each item is reserved in the same step that takes its debt: a fire
// reserving it in between would find neither, run as a plain fire, and
// the debt's run would run that fire again. ok is false when sess is not
// the live session the job is registered under.
func (b *Book) TakeDebts(sess *regcenter.Session, j Job, tried map[int]bool, disabled func() map[int]bool) (debts map[time.Time][]int, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.reg.stopping || sess != b.reg.sess || sess.Check() != nil {
		return nil, false
	}
	debts = map[time.Time][]int{}
	for it, at := range b.owed.Debts() {
		if _, busy := b.runs.running[it]; busy || tried[it] {
			continue
		}
		if _, waiting := b.remoteWaits[it]; waiting {
			b.log.Debug("owed run waits for the item's mark", "item", it)
			continue // running elsewhere: tried when its mark goes
		}
		tried[it] = true
		last := b.owed.LastOwed(it)
		b.owed.forget(it)
		if it < 0 || it >= j.Items || disabled()[it] {
			continue // no longer an item, or kept out
		}
		e := &execution{item: it, fire: at, through: b.makeUpThrough(j, at)}
		b.owed.dispatch(it, last)
		b.owed.dispatch(it, e.through)
		lazymap.Set(&b.runs.running, it, e)
		debts[at] = append(debts[at], it)
	}
	return debts, true
}

// ---- completions ----

// Paid records what a successful completion of n runs settled: the debts
// its runs covered, and the misfire nodes it deleted (with the waits they
// ended). For each i in order, run(i) returns the run (false: it was cut
// short, and paid nothing). run is called under the book's lock, so that
// what its caller records beside the book (what the completed nodes now
// hold) changes in the same step as the debts; it must not call the book.
func (b *Book) Paid(j Job, n int, run func(i int) (Ran, bool)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range n {
		res, ok := run(i)
		if !ok {
			continue
		}
		if since, owed := b.owed.Owed(res.Item); owed {
			b.settleLocked(j, res, since)
		}
		if since, _ := b.owed.Owed(res.Item); res.Covers(since) {
			b.owed.SetNode(res.Item, false)
			b.endRemoteWaitLocked(res.Item)
		}
	}
}

// settleLocked pays, from item res.Item's debt (owed since), the fires
// res covered (see Ran.UpTo): all of it, or its start.
func (b *Book) settleLocked(j Job, res Ran, since time.Time) {
	upTo := res.UpTo()
	if since.Before(res.Fire) || since.After(upTo) {
		return
	}
	last := b.owed.LastOwed(res.Item)
	if !last.After(upTo) {
		b.owed.forget(res.Item)
		b.log.Debug("owed run settled", "item", res.Item, "since", since, "by", res.Kind.String(), "fire", res.Fire)
		return
	}
	next := last
	if j.Schedule != nil {
		if n := j.Schedule.Next(upTo); !n.IsZero() && n.Before(last) {
			next = n
		}
	}
	b.owed.owedFrom(res.Item, next)
	b.log.Debug("owed run partly settled", "item", res.Item, "since", next, "by", res.Kind.String(), "fire", res.Fire)
}

// MisfireNodeCovered reports whether res.Item's misfire node, written
// here, goes with a completion of res (it covers the item's whole debt).
func (b *Book) MisfireNodeCovered(res Ran) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	since, _ := b.owed.Owed(res.Item)
	return b.owed.HasNode(res.Item) && res.Covers(since)
}

// ---- stop ----

// OwedRuns returns the runs this instance owes, by item: every debt, and
// for each held item the earlier of the fire missed while disconnected
// and upTo, when no fire here has taken upTo yet (unless paused: a paused
// server's fires are not owed, an operator held them). Items no longer
// the job's, or disabled, are owed nothing.
func (b *Book) OwedRuns(j Job, held []int, upTo time.Time, disabled map[int]bool, paused bool) []Owed {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.owedRunsLocked(j, held, upTo, disabled, paused)
}

func (b *Book) owedRunsLocked(j Job, held []int, upTo time.Time, disabled map[int]bool, paused bool) []Owed {
	since := map[int]time.Time{}
	owe := func(it int, at time.Time) {
		if at.IsZero() || it < 0 || it >= j.Items || disabled[it] {
			return
		}
		if prev, ok := since[it]; !ok || at.Before(prev) {
			since[it] = at
		}
	}
	for it, at := range b.owed.Debts() {
		owe(it, at)
	}
	for _, it := range held {
		owe(it, b.owed.MissedWhileDown())
		if !upTo.IsZero() && !paused && b.owed.DispatchedAt(it).Before(upTo) {
			owe(it, upTo)
		}
	}
	owed := make([]Owed, 0, len(since))
	for it, at := range since {
		owed = append(owed, Owed{Item: it, Since: at})
	}
	sort.Slice(owed, func(i, j int) bool { return owed[i].Item < owed[j].Item })
	return owed
}

// Left records a leave that gave up held and handed owed over: their
// debts and the fires missed while disconnected went with it.
func (b *Book) Left(held []int, owed []Owed) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reg.heldAtLeave = held
	for _, e := range owed {
		b.owed.forget(e.Item)
	}
	b.owed.takeMissed() // handed over with the assignment
}

// HeldAtLeaveAny reports whether the leave gave up any item.
func (b *Book) HeldAtLeaveAny() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.reg.heldAtLeave) > 0
}

// HandOverRest returns what is still owed once the runs have ended, for
// the items the leave gave up, and forgets every debt.
func (b *Book) HandOverRest(j Job, disabled map[int]bool, paused bool) []Owed {
	b.mu.Lock()
	defer b.mu.Unlock()
	owed := b.owedRunsLocked(j, b.reg.heldAtLeave, time.Time{}, disabled, paused)
	b.owed.forgetAll()
	return owed
}
