package job

import (
	"sync"
	"time"
)

// fireReservation is what reserveFire took for a scheduled fire: the items
// to run, and how it changed the ledger, so that a fire whose assumed
// assignment turns out wrong (errAssignmentMoved) can put everything back
// before it reads the assignment and fires again.
type fireReservation struct {
	// plain items run this fire only; debts run as make-up runs, grouped
	// by the earliest fire they owe.
	plain []int
	debts map[time.Time][]int
	// taken are the executions this fire put in r.runs.running.
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
	before, after ledgerEntry
}

// reserveFire reserves a scheduled fire's items here: those that owe
// nothing earlier are returned as plain, the others grouped by the earliest
// fire they owe (their debts are taken over by the make-up run). Items
// running here owe this fire (and any gap) a run.
//
// Items in ran (their previous owner ran this fire: see ranBefore) that owe
// nothing earlier are not reserved: the fire has run.
func (r *runner) reserveFire(items []int, at time.Time, gaps map[int]time.Time, ran map[int]bool, cfg *spec) *fireReservation {
	res := &fireReservation{}
	if len(items) == 1 {
		res.plain, res.taken, res.ledger = res.one.plain[:0], res.one.taken[:0], res.one.ledger[:0]
	} else {
		res.taken, res.ledger = make([]*execution, 0, len(items)), make([]ledgerChange, 0, len(items))
	}
	disabled := r.flags.disabledItems()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, it := range items {
		if it < 0 || it >= cfg.ShardingTotalCount || disabled[it] {
			continue // an assignment from before the item count shrank, or kept out
		}
		before := r.owed.entry(it)
		r.reserveItemLocked(res, it, at, gaps, ran[it], cfg)
		res.ledger = append(res.ledger, ledgerChange{it, before, r.owed.entry(it)})
	}
	return res
}

func (r *runner) reserveItemLocked(res *fireReservation, it int, at time.Time, gaps map[int]time.Time, ran bool, cfg *spec) {
	r.owed.dispatch(it, at)
	gap, gapped := gaps[it]
	if e, busy := r.runs.running[it]; busy {
		if cfg.Overlap == OverlapAllow {
			// Alongside the run still going: this fire runs as it is.
			res.taken = append(res.taken, r.runAlongsideLocked(it, at))
			res.plain = append(res.plain, it)
			return
		}
		from := at
		if gapped && gap.Before(at) {
			from = gap
		}
		r.oweBusyLocked(it, e, from, at, cfg)
		if !e.standsFor(at) {
			if cfg.Overlap == OverlapReplace && e.replace != nil {
				// The run owed above starts once the replaced one returns.
				r.log.Info("replacing the item's running execution with this fire", "item", it, "running", e.fire, "fire", at)
				e.replace()
			}
		}
		return
	}
	since, owed := r.owed.owed(it)
	if gapped && (!owed || gap.Before(since)) {
		since, owed = gap, true
	}
	if ran && !owed {
		return
	}
	e := &execution{item: it, fire: at, through: at}
	r.runs.running[it] = e
	res.taken = append(res.taken, e)
	if owed {
		r.owed.forget(it)
	}
	if owed && since.Before(at) {
		// A make-up run through this fire, which may be claimed ahead of
		// its time.
		e.fire, e.through = since, r.makeUpThrough(cfg, since)
		if e.through.Before(at) {
			e.through = at
		}
		if res.debts == nil {
			res.debts = map[time.Time][]int{}
		}
		res.debts[since] = append(res.debts[since], it)
		return
	}
	res.plain = append(res.plain, it)
}

// undo puts back what reserveFire took, for a fire that did not go ahead:
// the executions it reserved that are still reserved, and each item's
// ledger where nobody changed it since (a debt noted meanwhile stays).
func (r *runner) undo(res *fireReservation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	freed := false
	for _, e := range res.taken {
		switch {
		case e.alongside:
			r.endAlongsideLocked(e.item)
		case r.runs.running[e.item] == e:
			delete(r.runs.running, e.item)
			freed = true
		}
	}
	for i := len(res.ledger) - 1; i >= 0; i-- { // last change first
		l := res.ledger[i]
		if r.owed.entry(l.item) == l.after {
			r.owed.restore(l.item, l.before)
		}
	}
	if freed && len(r.runs.running) == 0 {
		r.wakeIdleLocked()
	}
}

// reserve claims items locally; items already running here owe a misfire
// since at (through a later fire, when given).
func (r *runner) reserve(items []int, at, through time.Time, kind Kind, cfg *spec) []int {
	disabled := r.flags.disabledItems()
	r.mu.Lock()
	defer r.mu.Unlock()
	var todo []int
	for _, it := range items {
		if it < 0 || it >= cfg.ShardingTotalCount {
			continue // an assignment from before the item count shrank
		}
		if disabled[it] {
			continue
		}
		// This scheduled fire (or, for a make-up run, the fire it stands
		// in for) is run or owed here.
		if kind == KindFire {
			r.owed.dispatch(it, at)
		}
		r.owed.dispatch(it, through)
		if _, busy := r.runs.running[it]; busy && cfg.Overlap == OverlapAllow && kind != KindFailover {
			r.runAlongsideLocked(it, at)
			todo = append(todo, it)
			continue
		}
		if e, busy := r.runs.running[it]; busy {
			if kind != KindFailover { // a failover debt stays queued
				to := at
				if through.After(at) {
					to = through
				}
				r.oweBusyLocked(it, e, at, to, cfg)
			}
			continue
		}
		e := &execution{item: it, fire: at, through: at}
		switch kind {
		case KindMisfire:
			e.through = r.makeUpThrough(cfg, at)
		case KindFailover:
			// Another instance's debt, run at once: through the latest
			// fire that has come, not one this instance claims ahead.
			e.through = r.pastThrough(cfg, at)
		}
		r.runs.running[it] = e
		todo = append(todo, it)
	}
	return todo
}

// oweBusyLocked notes the debt of a run for the fires from through to
// that found item busy with e: the fires e does not stand for. When e
// stands for from but ends before to, the debt starts at the first fire
// after e's — not at to, which would leave the fires between owed by
// nobody.
func (r *runner) oweBusyLocked(item int, e *execution, from, to time.Time, cfg *spec) {
	switch {
	case !e.standsFor(from):
		r.noteMisfireLocked(item, from, cfg)
	case to.After(e.through):
		first := to
		if sched, _, err := cfg.Schedule(); err == nil {
			if n := sched.Next(e.through); !n.IsZero() && n.Before(to) {
				first = n
			}
		}
		r.noteMisfireLocked(item, first, cfg)
	}
	if to.After(from) && !e.standsFor(to) {
		r.noteMisfireLocked(item, to, cfg)
	}
}

func (r *runner) release(items []int) {
	// A failover run ended (or gave its claim back): its claim goes
	// before the item is free, so that a claim made once it is free is
	// not the one dropped.
	r.fo.unclaim(items)
	r.mu.Lock()
	for _, it := range items {
		if r.endAlongsideLocked(it) {
			continue // the item's other run goes on
		}
		delete(r.runs.running, it)
	}
	idle := len(r.runs.running) == 0
	if idle {
		r.wakeIdleLocked()
		r.s.itemsIdle()
	}
	owed := false
	for _, it := range items {
		if _, ok := r.owed.owed(it); ok {
			owed = true
		}
	}
	trig := idle && r.runs.triggerQueued
	if trig {
		r.runs.triggerQueued = false
	}
	r.mu.Unlock()
	dirty := r.fo.dirty()
	if trig {
		r.goFunc(r.fireTriggered)
	}
	switch {
	case owed && dirty:
		// Queued debts first: the instance that runs an item pays the
		// item's failover entry before its own next misfire run, which
		// would otherwise re-mark the item and keep claimers off forever.
		r.goFunc(func() {
			r.claimFailover()
			r.runOwed(r.rc.Session())
		})
	case owed:
		// A fire that found these items busy owes them a run now.
		r.goFunc(func() { r.runOwed(r.rc.Session()) })
	case dirty:
		r.kick.failover.kick()
	}
}

// runAlongsideLocked counts a run of item beside the one running here
// (OverlapAllow) and returns its execution. The item stays in
// r.runs.running, standing for every run of it, until the last of them is
// released. r.mu is held.
func (r *runner) runAlongsideLocked(item int, at time.Time) *execution {
	if r.runs.alongside == nil {
		r.runs.alongside = map[int]int{}
	}
	r.runs.alongside[item]++
	return &execution{item: item, fire: at, through: at, alongside: true}
}

// endAlongsideLocked releases one of the runs of item counted by
// runAlongsideLocked, if any, and reports whether it did: the item stays
// reserved for its other runs. r.mu is held.
func (r *runner) endAlongsideLocked(item int) bool {
	n := r.runs.alongside[item]
	switch {
	case n == 0:
		return false
	case n == 1:
		delete(r.runs.alongside, item)
	default:
		r.runs.alongside[item] = n - 1
	}
	return true
}

// queueTriggerIfBusy queues a trigger for when the items running here
// are released, if any run, and reports whether it did; release runs it.
func (r *runner) queueTriggerIfBusy() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	busy := len(r.runs.running) > 0
	if busy {
		r.runs.triggerQueued = true
	}
	return busy
}

// idleLocked returns a channel closed once the items running here are
// released. It is made for a waiter, so that a release nobody waits for
// makes none. r.mu is held.
func (r *runner) idleLocked() <-chan struct{} {
	if r.runs.idle == nil {
		r.runs.idle = make(chan struct{})
	}
	return r.runs.idle
}

// wakeIdleLocked wakes the waiters of idleLocked. r.mu is held.
func (r *runner) wakeIdleLocked() {
	if r.runs.idle != nil {
		close(r.runs.idle)
		r.runs.idle = nil
	}
}

// isRunning reports whether item is reserved or running here.
func (r *runner) isRunning(item int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.runs.running[item]
	return ok
}

// runningCount is how many items run here now.
func (r *runner) runningCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.runs.running)
}

// runAccount is what runs here: the items reserved or running, and the
// scheduled fires in flight; running and idle are under r.mu.
type runAccount struct {
	running map[int]*execution
	// alongside counts, per item, the runs beside the one in running
	// (OverlapAllow); the item leaves running with the last of them.
	alongside map[int]int
	// triggerQueued: a trigger arrived while items ran (see
	// queueTriggerIfBusy); the release that leaves none running runs it.
	triggerQueued bool
	idle          chan struct{}  // made by a waiter (idleLocked), closed and dropped when items are released
	firing        sync.WaitGroup // scheduled fires in flight
	// order makes scheduled fires reserve their items in fire order: a fire
	// held up in coordination (a slow ZooKeeper, a reshard) would otherwise
	// find its item taken by the next fire, owe a run, and its make-up run
	// would run that next fire again.
	order sync.Mutex
}
