package book

import (
	"time"

	"github.com/shardjob/shardjob/internal/lazymap"

	"github.com/shardjob/shardjob/job/internal/fireplan"
)

// Reservation is what ReserveFire took for a scheduled fire: the items to
// run, and how it changed the ledger, so that a fire whose assumed
// assignment turns out wrong can put everything back (Undo) before it
// reads the assignment and fires again.
type Reservation struct {
	// Plain items run this fire only; Debts run as make-up runs, grouped
	// by the earliest fire they owe.
	Plain []int
	Debts map[time.Time][]int

	// taken are the executions this fire put in the book's runs.
	taken []*execution
	// ledger holds each touched item's entries before and after the
	// reservation.
	ledger []ledgerChange

	// one backs the slices above for a fire of one item (most fires): a
	// single allocation for the whole reservation.
	one struct {
		plain  [1]int
		taken  [1]*execution
		ledger [1]ledgerChange
	}
}

// ledgerChange is an item's ledger entry before and after a reservation.
type ledgerChange struct {
	item          int
	before, after entry
}

// ReserveFire reserves the items of j's scheduled fire at here: those that
// owe nothing earlier are returned as Plain, the others grouped by the
// earliest fire they owe (their debts are taken over by the make-up run).
// Items running here owe this fire (and any gap) a run. gaps are the
// earliest fires the items' previous owners left undone; disabled are the
// items kept out.
//
// Items in ran (their previous owner ran this fire) that owe nothing
// earlier are not reserved: the fire has run. What each item does is
// fireplan.Decide's.
func (b *Book) ReserveFire(j Job, items []int, at time.Time, gaps map[int]time.Time, ran, disabled map[int]bool) *Reservation {
	res := &Reservation{}
	if len(items) == 1 {
		res.Plain, res.taken, res.ledger = res.one.plain[:0], res.one.taken[:0], res.one.ledger[:0]
	} else {
		res.taken, res.ledger = make([]*execution, 0, len(items)), make([]ledgerChange, 0, len(items))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, it := range items {
		if it < 0 || it >= j.Items || disabled[it] {
			continue // an assignment from before the item count shrank, or kept out
		}
		before := b.owed.entry(it)
		b.reserveItemLocked(res, j, it, at, gaps, ran[it])
		res.ledger = append(res.ledger, ledgerChange{it, before, b.owed.entry(it)})
	}
	return res
}

func (b *Book) reserveItemLocked(res *Reservation, j Job, it int, at time.Time, gaps map[int]time.Time, ran bool) {
	e, busy := b.runs.running[it]
	since, owed := b.owed.Owed(it)
	fact := fireplan.Item{Busy: busy, Owed: owed, OwedSince: since, Gap: gaps[it], RanElsewhere: ran, Dispatched: b.owed.DispatchedAt(it)}
	if busy {
		fact.Running = e.span()
	}
	b.owed.dispatch(it, at)
	fire := fireplan.Fire{At: at, Overlap: j.Overlap, Schedule: j.Schedule, Now: b.now(), Lead: b.lead}
	if busy && b.followLocked(res, e, fire, fact) {
		return
	}
	d := fireplan.Decide(fire, fact)
	switch d.Action {
	case fireplan.Alongside:
		res.taken = append(res.taken, b.runAlongsideLocked(it, at))
		res.Plain = append(res.Plain, it)
	case fireplan.Owe:
		b.noteOwesLocked(j, it, d.Owes)
		if d.Replace && e.replace != nil {
			// The run owed above starts once the replaced one returns.
			b.log.Info("replacing the item's running execution with this fire", "item", it, "running", e.fire, "fire", at)
			e.replace()
		}
	case fireplan.RunHere:
		b.log.Info("fire already run here by a make-up run through it", "item", it, "fire", at)
	case fireplan.Run:
		e := &execution{item: it, fire: d.Run.First, through: d.Run.Last}
		lazymap.Set(&b.runs.running, it, e)
		res.taken = append(res.taken, e)
		if d.ForgetDebt {
			b.owed.forget(it)
		}
		if !d.MakeUp {
			res.Plain = append(res.Plain, it)
			return
		}
		// A make-up run through this fire, which may be claimed ahead of
		// its time.
		b.owed.dispatch(it, d.Run.Last)
		if res.Debts == nil {
			res.Debts = map[time.Time][]int{}
		}
		res.Debts[d.Run.First] = append(res.Debts[d.Run.First], it)
	}
}

// followLocked reserves item e.item for the plain fire at, beside its
// execution e, when e's run has returned and only its completion is being
// written, or waits for the completion before it (Writing), and the fire
// would run plain were the item free: it owes nothing and e does not
// stand for it. The fire runs on time, not as a make-up run once the write
// returns; its completion waits for e's (After) and adds to the record
// e's wrote, so that the records are written in the order of the fires,
// as if the runs had not met. It reports whether it reserved the item.
func (b *Book) followLocked(res *Reservation, e *execution, f fireplan.Fire, fact fireplan.Item) bool {
	if !e.writing || e.alongside || f.Overlap == fireplan.OverlapAllow || !e.through.Before(f.At) {
		return false
	}
	fact.Busy, fact.Running = false, fireplan.Span{}
	if d := fireplan.Decide(f, fact); d.Action != fireplan.Run || d.MakeUp || d.ForgetDebt {
		return false
	}
	if e.written == nil {
		e.written = make(chan struct{})
	}
	next := &execution{item: e.item, fire: f.At, through: f.At, prev: e, after: e.written}
	b.setRunningLocked(next)
	res.taken = append(res.taken, next)
	res.Plain = append(res.Plain, e.item)
	return true
}

// After returns, for the run of item for the fire at that followed a run
// whose completion was being written (ReserveFire), what is closed once
// that completion ends: the run's own completion waits for it, then adds
// to the record it wrote. Nil for any other run (the steady state).
func (b *Book) After(item int, at time.Time) <-chan struct{} {
	if b.followers.Load() == 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.runs.running[item]; e != nil && e.after != nil && e.fire.Equal(at) {
		return e.after
	}
	return nil
}

// Returned reports whether item's execution here has returned and its
// completion, keeping the mark, is being written or waits for the one
// before it (Writing): the item's next plain fire would follow it.
func (b *Book) Returned(item int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.runs.running[item]
	return e != nil && e.writing
}

// setRunningLocked puts e in the runs as its item's execution, in place
// of any before it, counting the followers (After) in and out.
func (b *Book) setRunningLocked(e *execution) {
	if old := b.runs.running[e.item]; old != nil && old.after != nil {
		b.followers.Add(-1)
	}
	if e.after != nil {
		b.followers.Add(1)
	}
	lazymap.Set(&b.runs.running, e.item, e)
}

// deleteRunningLocked takes item's execution out of the runs.
func (b *Book) deleteRunningLocked(item int) {
	if old := b.runs.running[item]; old != nil && old.after != nil {
		b.followers.Add(-1)
	}
	delete(b.runs.running, item)
}

// Writing notes that the runs of items for the fires at (by position)
// have returned and that their completions, which keep the items' marks,
// are being written or wait for the completion before them (After): the
// items' next plain fires may run beside them (ReserveFire). Executions of other fires, or runs alongside, are left
// as they are.
func (b *Book) Writing(items []int, fires []time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, it := range items {
		if e := b.runs.running[it]; e != nil && b.runs.alongside[it] == 0 && e.fire.Equal(fires[i]) {
			e.writing = true
		}
	}
}

// Undo puts back what ReserveFire took, for a fire that did not go ahead:
// the executions it reserved that are still reserved, and each item's
// ledger where nobody changed it since (a debt noted meanwhile stays).
func (b *Book) Undo(res *Reservation) {
	b.mu.Lock()
	defer b.mu.Unlock()
	freed := false
	for _, e := range res.taken {
		switch {
		case e.alongside:
			b.endAlongsideLocked(e.item)
		case e.prev != nil && b.runs.running[e.item] == e:
			// Followed a writing execution still in the book: it is
			// the item's again.
			b.setRunningLocked(e.prev)
		case b.runs.running[e.item] == e:
			b.deleteRunningLocked(e.item)
			freed = true
		}
	}
	for i := len(res.ledger) - 1; i >= 0; i-- { // last change first
		l := res.ledger[i]
		if b.owed.entry(l.item) == l.after {
			b.owed.restore(l.item, l.before)
		}
	}
	if freed && len(b.runs.running) == 0 {
		// As a release: a fire whose proof failed (a reshard moved its
		// items, as a drain does) may have held the last items reserved
		// here, and a drain waits for none to be.
		b.wakeIdleLocked()
		b.onIdle()
	}
}

// Reserve claims items locally for a run of kind since the fire at (and
// through a later fire, when given): the items it returns. Items already
// running here owe a run since at (through the later fire); a failover
// run leaves them to its queued debt, and under OverlapAllow the others
// run beside them. A misfire run stands for every fire dispatched by now
// with the scheduler's lead, a failover run for every fire come by now;
// disabled are the items kept out.
func (b *Book) Reserve(j Job, items []int, at, through time.Time, kind Kind, disabled map[int]bool) []int {
	var pastThrough time.Time
	if kind == Failover {
		pastThrough = fireplan.MakeUpThrough(j.Schedule, at, b.now(), 0)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var todo []int
	for _, it := range items {
		if it < 0 || it >= j.Items {
			continue // an assignment from before the item count shrank
		}
		if disabled[it] {
			continue
		}
		// This scheduled fire (or, for a make-up run, the fire it stands
		// in for) is run or owed here.
		if kind == Fire {
			b.owed.dispatch(it, at)
		}
		b.owed.dispatch(it, through)
		if _, busy := b.runs.running[it]; busy && j.Overlap == fireplan.OverlapAllow && kind != Failover {
			b.runAlongsideLocked(it, at)
			todo = append(todo, it)
			continue
		}
		if e, busy := b.runs.running[it]; busy {
			// A failover debt stays queued; a backfill tries the fire
			// again later.
			if kind != Failover && kind != Backfill {
				to := at
				if through.After(at) {
					to = through
				}
				b.noteOwesLocked(j, it, fireplan.BusyDebts(e.span(), at, to, j.Schedule))
			}
			continue
		}
		e := &execution{item: it, fire: at, through: at}
		switch kind {
		case Misfire:
			e.through = b.makeUpThrough(j, at)
			b.owed.dispatch(it, e.through)
		case Failover:
			// Another instance's debt, run at once: through the latest
			// fire that has come, not one this instance claims ahead.
			e.through = pastThrough
			b.owed.dispatch(it, e.through)
		}
		lazymap.Set(&b.runs.running, it, e)
		todo = append(todo, it)
	}
	return todo
}

// makeUpThrough is the latest fire a make-up run since since, reserved
// now, stands for: the latest dispatched by now with the scheduler's lead.
func (b *Book) makeUpThrough(j Job, since time.Time) time.Time {
	return fireplan.MakeUpThrough(j.Schedule, since, b.now(), b.lead)
}

// Release frees items, and reports whether none run here now, whether
// any of them is owed a run, and whether a trigger queued for that moment
// is to run (it is taken).
func (b *Book) Release(items []int) (idle, owed, trigger bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, it := range items {
		if e := b.runs.running[it]; e != nil && e.prev != nil {
			// A followed item is released once per run of its chain,
			// the oldest first: the completions end in turn, each
			// waiting for the one before (After). The oldest leaves the
			// chain, and the completion waiting for it goes on. (A
			// follower whose run ended unmarked is released before the
			// runs it followed: the wait it ends early is then the next
			// one's, whose completion adds to the record all the same,
			// re-reading it where a write came between.)
			x := e
			for x.prev.prev != nil {
				x = x.prev
			}
			close(x.prev.written)
			x.prev = nil
			continue
		}
		if b.endAlongsideLocked(it) {
			continue // the item's other run goes on
		}
		b.deleteRunningLocked(it)
	}
	idle = len(b.runs.running) == 0
	if idle {
		b.wakeIdleLocked()
		b.onIdle()
	}
	for _, it := range items {
		if _, ok := b.owed.Owed(it); ok {
			owed = true
		}
	}
	trigger = idle && b.runs.triggerQueued
	if trigger {
		b.runs.triggerQueued = false
	}
	return idle, owed, trigger
}

// runAlongsideLocked counts a run of item beside the one running here
// (OverlapAllow) and returns its execution. The item stays in
// runs.running, standing for every run of it, until the last of them is
// released.
func (b *Book) runAlongsideLocked(item int, at time.Time) *execution {
	if b.runs.alongside == nil {
		b.runs.alongside = map[int]int{}
	}
	b.runs.alongside[item]++
	return &execution{item: item, fire: at, through: at, alongside: true}
}

// endAlongsideLocked releases one of the runs of item counted by
// runAlongsideLocked, if any, and reports whether it did: the item stays
// reserved for its other runs.
func (b *Book) endAlongsideLocked(item int) bool {
	n := b.runs.alongside[item]
	switch {
	case n == 0:
		return false
	case n == 1:
		delete(b.runs.alongside, item)
	default:
		b.runs.alongside[item] = n - 1
	}
	return true
}
