package job

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/failover"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/regcenter"
)

// book is this instance's account of a job's items: which run here (and
// the runs beside them), the debts a reservation takes in the same step as
// it reserves, the waits on owed items running elsewhere, and whether the
// registration still takes fires. A reservation, a release and stop's
// leave each change several of these at once, so they share one lock,
// taken only in this file. The ledger keeps its own lock and is called
// under this one, never the reverse.
type book struct {
	mu          sync.Mutex
	reg         registration   // this instance's registration (register.go)
	runs        runAccount     // the items running here
	remoteWaits map[int]func() // watches on owed items running elsewhere (owed.go)

	owed         *ledger          // shared with the runner (ledger.go)
	log          *slog.Logger     // the job's
	misfiresOwed *atomic.Int64    // JobStats' count of debts noted
	now          func() time.Time // the scheduler's clock
	lead         time.Duration    // the scheduler's fire lead
	onIdle       func()           // the last item running here was released
}

// runAccount is what runs here: the items reserved or running, and the
// scheduled fires in flight.
type runAccount struct {
	running map[int]*execution
	// alongside counts, per item, the runs beside the one in running
	// (OverlapAllow); the item leaves running with the last of them.
	alongside map[int]int
	// triggerQueued: a trigger arrived while items ran (see
	// queueTriggerIfBusy); the release that leaves none running runs it.
	triggerQueued bool
	idle          chan struct{}  // made by a waiter (idleLocked), closed and dropped when items are released
	firing        sync.WaitGroup // scheduled fires in flight (beginFiring)
}

func newBook(owed *ledger, log *slog.Logger, misfiresOwed *atomic.Int64, now func() time.Time, lead time.Duration, onIdle func()) *book {
	return &book{
		runs:        runAccount{running: map[int]*execution{}},
		remoteWaits: map[int]func(){},
		owed:        owed, log: log, misfiresOwed: misfiresOwed, now: now, lead: lead, onIdle: onIdle,
	}
}

// ---- the registration ----

// registered records that the job is registered here under sess.
func (b *book) registered(sess *regcenter.Session) {
	b.mu.Lock()
	b.reg.sess = sess
	b.mu.Unlock()
}

// beginStop marks the registration stopping: no new fires.
func (b *book) beginStop() {
	b.mu.Lock()
	b.reg.stopping = true
	b.mu.Unlock()
}

// markRemoved records that the job was removed from the cluster.
func (b *book) markRemoved(removed bool) {
	b.mu.Lock()
	b.reg.removed = removed
	b.mu.Unlock()
}

// leaving reports, for stop, whether the job is registered under a live
// session and whether it was removed from the cluster.
func (b *book) leaving() (registered, removed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reg.sess != nil && b.reg.sess.Err() == nil, b.reg.removed
}

// isStopping reports whether stop has begun here.
func (b *book) isStopping() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reg.stopping
}

// registeredSession returns the session the job is registered under here
// (nil before it first registers) and whether stop has begun.
func (b *book) registeredSession() (*regcenter.Session, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reg.sess, b.reg.stopping
}

// registeredUnder reports whether the job is registered here under sess,
// and not stopping.
func (b *book) registeredUnder(sess *regcenter.Session) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reg.sess == sess && !b.reg.stopping
}

// beginFiring counts a scheduled fire in flight, which stop waits for
// (runs.firing), and reports true; false once stop has begun: the leave
// hands the fire's items over, and no fire may join the wait stop is in.
func (b *book) beginFiring() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.reg.stopping {
		return false
	}
	b.runs.firing.Add(1)
	return true
}

// endFiring ends what beginFiring began.
func (b *book) endFiring() { b.runs.firing.Done() }

// waitFiring waits for the fires in flight until ctx ends (false).
func (b *book) waitFiring(ctx context.Context) bool { return waitCtx(ctx, &b.runs.firing) }

// ---- reservations ----

// reserveFire reserves a scheduled fire's items in res (see
// runner.reserveFire); disabled are the items kept out.
func (b *book) reserveFire(res *fireReservation, items []int, at time.Time, gaps map[int]time.Time, ran map[int]bool, cfg *spec, disabled map[int]bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, it := range items {
		if it < 0 || it >= cfg.ShardingTotalCount || disabled[it] {
			continue // an assignment from before the item count shrank, or kept out
		}
		before := b.owed.entry(it)
		b.reserveItemLocked(res, it, at, gaps, ran[it], cfg)
		res.ledger = append(res.ledger, ledgerChange{it, before, b.owed.entry(it)})
	}
}

func (b *book) reserveItemLocked(res *fireReservation, it int, at time.Time, gaps map[int]time.Time, ran bool, cfg *spec) {
	e, busy := b.runs.running[it]
	since, owed := b.owed.owed(it)
	fact := fireplan.Item{Busy: busy, Owed: owed, OwedSince: since, Gap: gaps[it], RanElsewhere: ran, Dispatched: b.owed.dispatchedAt(it)}
	if busy {
		fact.Running = e.span()
	}
	b.owed.dispatch(it, at)
	d := fireplan.Decide(b.planFire(cfg, at), fact)
	switch d.Action {
	case fireplan.Alongside:
		res.taken = append(res.taken, b.runAlongsideLocked(it, at))
		res.plain = append(res.plain, it)
	case fireplan.Owe:
		b.noteOwesLocked(it, d.Owes, cfg)
		if d.Replace && e.replace != nil {
			// The run owed above starts once the replaced one returns.
			b.log.Info("replacing the item's running execution with this fire", "item", it, "running", e.fire, "fire", at)
			e.replace()
		}
	case fireplan.RunHere:
		b.log.Info("fire already run here by a make-up run through it", "item", it, "fire", at)
	case fireplan.Run:
		e := &execution{item: it, fire: d.Run.First, through: d.Run.Last}
		b.runs.running[it] = e
		res.taken = append(res.taken, e)
		if d.ForgetDebt {
			b.owed.forget(it)
		}
		if !d.MakeUp {
			res.plain = append(res.plain, it)
			return
		}
		// A make-up run through this fire, which may be claimed ahead of
		// its time.
		b.owed.dispatch(it, d.Run.Last)
		if res.debts == nil {
			res.debts = map[time.Time][]int{}
		}
		res.debts[d.Run.First] = append(res.debts[d.Run.First], it)
	}
}

// planFire is the scheduled fire at of a job with cfg, as the plan takes
// it.
func (b *book) planFire(cfg *spec, at time.Time) fireplan.Fire {
	sched, _, _ := cfg.Schedule()
	return fireplan.Fire{At: at, Overlap: planOverlap(cfg.Overlap), Schedule: sched, Now: b.now(), Lead: b.lead}
}

// planOverlap is p as the plan takes it.
func planOverlap(p OverlapPolicy) fireplan.Overlap {
	switch p {
	case OverlapAllow:
		return fireplan.OverlapAllow
	case OverlapReplace:
		return fireplan.OverlapReplace
	}
	return fireplan.OverlapWait
}

// noteOwesLocked notes the fires in o as owed by item.
func (b *book) noteOwesLocked(item int, o fireplan.Owes, cfg *spec) {
	for _, at := range o.All() {
		b.noteMisfireLocked(item, at, cfg)
	}
}

// makeUpThrough is the latest fire a make-up run since since, reserved
// now, stands for (see runner.makeUpThrough).
func (b *book) makeUpThrough(cfg *spec, since time.Time) time.Time {
	return throughWithLead(cfg, since, b.now(), b.lead)
}

// undo puts back what reserveFire took (see runner.undo).
func (b *book) undo(res *fireReservation) {
	b.mu.Lock()
	defer b.mu.Unlock()
	freed := false
	for _, e := range res.taken {
		switch {
		case e.alongside:
			b.endAlongsideLocked(e.item)
		case b.runs.running[e.item] == e:
			delete(b.runs.running, e.item)
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

// reserve claims items locally (see runner.reserve).
func (b *book) reserve(items []int, at, through time.Time, kind Kind, cfg *spec, disabled map[int]bool, pastThrough time.Time) []int {
	b.mu.Lock()
	defer b.mu.Unlock()
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
			b.owed.dispatch(it, at)
		}
		b.owed.dispatch(it, through)
		if _, busy := b.runs.running[it]; busy && cfg.Overlap == OverlapAllow && kind != KindFailover {
			b.runAlongsideLocked(it, at)
			todo = append(todo, it)
			continue
		}
		if e, busy := b.runs.running[it]; busy {
			if kind != KindFailover { // a failover debt stays queued
				to := at
				if through.After(at) {
					to = through
				}
				b.oweBusyLocked(it, e, at, to, cfg)
			}
			continue
		}
		e := &execution{item: it, fire: at, through: at}
		switch kind {
		case KindMisfire:
			e.through = b.makeUpThrough(cfg, at)
			b.owed.dispatch(it, e.through)
		case KindFailover:
			// Another instance's debt, run at once: through the latest
			// fire that has come, not one this instance claims ahead.
			e.through = pastThrough
			b.owed.dispatch(it, e.through)
		}
		b.runs.running[it] = e
		todo = append(todo, it)
	}
	return todo
}

// oweBusyLocked notes the debt of a run for the fires from through to
// that found item busy with e (see fireplan.BusyDebts).
func (b *book) oweBusyLocked(item int, e *execution, from, to time.Time, cfg *spec) {
	sched, _, _ := cfg.Schedule()
	b.noteOwesLocked(item, fireplan.BusyDebts(e.span(), from, to, sched), cfg)
}

// release frees items, and reports whether none run here now, whether
// any of them is owed a run, and whether a trigger queued for that moment
// is to run (it is taken).
func (b *book) release(items []int) (idle, owed, trigger bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, it := range items {
		if b.endAlongsideLocked(it) {
			continue // the item's other run goes on
		}
		delete(b.runs.running, it)
	}
	idle = len(b.runs.running) == 0
	if idle {
		b.wakeIdleLocked()
		b.onIdle()
	}
	for _, it := range items {
		if _, ok := b.owed.owed(it); ok {
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
func (b *book) runAlongsideLocked(item int, at time.Time) *execution {
	if b.runs.alongside == nil {
		b.runs.alongside = map[int]int{}
	}
	b.runs.alongside[item]++
	return &execution{item: item, fire: at, through: at, alongside: true}
}

// endAlongsideLocked releases one of the runs of item counted by
// runAlongsideLocked, if any, and reports whether it did: the item stays
// reserved for its other runs.
func (b *book) endAlongsideLocked(item int) bool {
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

// queueTriggerIfBusy queues a trigger for when the items running here
// are released, if any run, and reports whether it did; release runs it.
func (b *book) queueTriggerIfBusy() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	busy := len(b.runs.running) > 0
	if busy {
		b.runs.triggerQueued = true
	}
	return busy
}

// steadyOrIdle reports whether no item runs here and nothing is owed
// (the steady state of untilClaim); otherwise it returns a channel closed
// once the items running here are released.
func (b *book) steadyOrIdle() (steady bool, idle <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.runs.running) == 0 && b.owed.settled() {
		return true, nil
	}
	return false, b.idleLocked()
}

// waitIdle waits until no item runs here, or ctx ends (false).
func (b *book) waitIdle(ctx context.Context) bool {
	for {
		b.mu.Lock()
		if len(b.runs.running) == 0 {
			b.mu.Unlock()
			return true
		}
		idle := b.idleLocked()
		b.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return false
		}
	}
}

// idleLocked returns a channel closed once the items running here are
// released. It is made for a waiter, so that a release nobody waits for
// makes none.
func (b *book) idleLocked() <-chan struct{} {
	if b.runs.idle == nil {
		b.runs.idle = make(chan struct{})
	}
	return b.runs.idle
}

// wakeIdleLocked wakes the waiters of idleLocked.
func (b *book) wakeIdleLocked() {
	if b.runs.idle != nil {
		close(b.runs.idle)
		b.runs.idle = nil
	}
}

// isRunning reports whether item is reserved or running here.
func (b *book) isRunning(item int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.runs.running[item]
	return ok
}

// runningCount is how many items run here now.
func (b *book) runningCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.runs.running)
}

// ---- the executions ----

// latestThrough returns the latest fire the executions of items reserved
// here stand for, at the earliest at.
func (b *book) latestThrough(at time.Time, items ...int) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, it := range items {
		if e := b.runs.running[it]; e != nil && e.through.After(at) {
			at = e.through
		}
	}
	return at
}

// started records that the executions of items first..last start as a run
// of kind for the fire at (replace, if not nil, cancels a one-item run for
// a fire that replaces it), and returns the latest fire they stand for.
func (b *book) started(first, last int, kind Kind, at time.Time, replace func()) time.Time {
	through := at
	b.mu.Lock()
	defer b.mu.Unlock()
	for it := first; it <= last; it++ {
		if e := b.runs.running[it]; e != nil {
			e.kind, e.fire = kind, at
			if e.through.After(through) {
				through = e.through
			}
			if replace != nil {
				e.replace = replace
			}
		}
	}
	return through
}

// ---- debts ----

// noteMisfire records that item missed the fire at, unless the job drops
// missed fires.
func (b *book) noteMisfire(item int, at time.Time, cfg *spec) {
	b.mu.Lock()
	b.noteMisfireLocked(item, at, cfg)
	b.mu.Unlock()
}

func (b *book) noteMisfireLocked(item int, at time.Time, cfg *spec) {
	if cfg.skipsMissed() {
		return
	}
	if b.owed.owe(item, at) {
		b.misfiresOwed.Add(1)
		b.log.Debug("run owed", "item", item, "since", at)
	}
}

// noteSuspendedMiss records the fire at, skipped while the connection was
// down; a leave hands the ledger over and clears it in one step.
func (b *book) noteSuspendedMiss(at time.Time) {
	b.mu.Lock()
	b.owed.missWhileDown(at)
	b.mu.Unlock()
}

// takeMissed returns and clears the earliest fire skipped here.
func (b *book) takeMissed() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.owed.takeMissed()
}

// narrow is stillOwed's step for one item of a make-up run since since
// whose record says c: the first and last fires to run and the first fire
// left owed (see record.owed), which it notes as a debt; the execution
// holding the item stands for no more than last. upTo is the latest fire
// the run stood for.
func (b *book) narrow(item int, since time.Time, c record, cfg *spec) (first, last, rest, upTo time.Time) {
	sched, _, err := cfg.Schedule()
	b.mu.Lock()
	defer b.mu.Unlock()
	upTo = since
	e := b.runs.running[item]
	if e != nil && e.through.After(upTo) {
		upTo = e.through
	}
	if err != nil {
		return since, upTo, time.Time{}, upTo
	}
	first, last, rest = c.Owed(sched, since, upTo)
	if !first.IsZero() {
		if e != nil {
			e.through = last
		}
		if !rest.IsZero() {
			b.noteMisfireLocked(item, rest, cfg)
		}
	}
	return first, last, rest, upTo
}

// absorbDebts folds the debts of items into a make-up run starting at at
// (see runner.absorbDebts).
func (b *book) absorbDebts(cfg *spec, items []int, at time.Time) map[int]time.Time {
	fires := map[int]time.Time{}
	sched, _, schedErr := cfg.Schedule()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, it := range items {
		since, owed := b.owed.owed(it)
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
		if last := b.owed.lastOwed(it); last.After(through) && schedErr == nil {
			if next := sched.Next(through); !next.IsZero() && !next.After(last) {
				b.owed.owedFrom(it, next) // the fires after the run stay owed
				continue
			}
		}
		b.owed.forget(it)
	}
	return fires
}

// oweRemote notes that item missed the fire at because it runs elsewhere,
// and returns the start of its debt, whether this instance has written
// its misfire node, and whether a wait for its mark is set.
func (b *book) oweRemote(item int, at time.Time, cfg *spec) (since time.Time, haveNode, waiting bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.noteMisfireLocked(item, at, cfg)
	since, _ = b.owed.owed(item)
	_, waiting = b.remoteWaits[item]
	return since, b.owed.hasNode(item), waiting
}

// wroteMisfireNode records that item's misfire node exists.
func (b *book) wroteMisfireNode(item int) {
	b.mu.Lock()
	b.owed.setNode(item, true)
	b.mu.Unlock()
}

// waitRemote keeps cancel, which ends the wait for item's mark elsewhere,
// and reports true; false if a wait is set already (cancel is not kept).
func (b *book) waitRemote(item int, cancel func()) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, dup := b.remoteWaits[item]; dup {
		return false
	}
	b.remoteWaits[item] = cancel
	return true
}

// endRemoteWait ends the wait for item's mark elsewhere, if any.
func (b *book) endRemoteWait(item int) {
	b.mu.Lock()
	b.endRemoteWaitLocked(item)
	b.mu.Unlock()
}

func (b *book) endRemoteWaitLocked(item int) {
	if c := b.remoteWaits[item]; c != nil {
		c()
		delete(b.remoteWaits, item)
	}
}

// takeDebts reserves, grouped by the fire each owes since, the items owed
// a run that neither run here, nor were tried (it marks them), nor wait
// for a mark elsewhere, and takes their debts: for runOwed. Each item is
// reserved in the same step that takes its debt: a fire reserving it in
// between would find neither, run as a plain fire, and the debt's run
// would run that fire again. ok is false when sess is not the live
// session the job is registered under.
func (b *book) takeDebts(sess *regcenter.Session, cfg *spec, tried map[int]bool, disabled func() map[int]bool) (debts map[time.Time][]int, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.reg.stopping || sess != b.reg.sess || sess.Check() != nil {
		return nil, false
	}
	debts = map[time.Time][]int{}
	for it, at := range b.owed.debts() {
		if _, busy := b.runs.running[it]; busy || tried[it] {
			continue
		}
		if _, waiting := b.remoteWaits[it]; waiting {
			b.log.Debug("owed run waits for the item's mark", "item", it)
			continue // running elsewhere: tried when its mark goes
		}
		tried[it] = true
		last := b.owed.lastOwed(it)
		b.owed.forget(it)
		if it < 0 || it >= cfg.ShardingTotalCount || disabled()[it] {
			continue // no longer an item, or kept out
		}
		e := &execution{item: it, fire: at, through: b.makeUpThrough(cfg, at)}
		b.owed.dispatch(it, last)
		b.owed.dispatch(it, e.through)
		b.runs.running[it] = e
		debts[at] = append(debts[at], it)
	}
	return debts, true
}

// ---- completions ----

// paid records what a successful completion c settled: the misfire debts
// its executions covered, and the misfire nodes it deleted (with the
// waits they ended); records notes what the completed nodes now hold.
func (b *book) paid(cfg *spec, c *completion, records *recordCache) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var at time.Time
	for i, res := range c.batch {
		if res.halted != nil {
			continue
		}
		var failed []failedRun
		if c.failed != nil {
			failed = c.failed[i]
		}
		if m, ok := c.deferred[i]; ok {
			records.deferred(res.item, record{cover: c.recorded[i], version: res.prior.version, versioned: true, failed: failed}, m)
		} else if v, ok := c.wrote[res.item]; ok {
			if at.IsZero() {
				at = b.now()
			}
			records.wrote(res.item, record{cover: c.recorded[i], version: v, versioned: v >= 0, failed: failed}, at)
		} else {
			records.seen(res.item, true)
		}
		if since, owed := b.owed.owed(res.item); owed {
			b.settleLocked(cfg, res, since)
		}
		if since, _ := b.owed.owed(res.item); res.covers(since) {
			b.owed.setNode(res.item, false)
			b.endRemoteWaitLocked(res.item)
		}
	}
}

// settleLocked pays, from item res.item's misfire debt (owed since), the
// fires res covered (see coveredUpTo): all of it, or its start.
func (b *book) settleLocked(cfg *spec, res itemResult, since time.Time) {
	upTo := res.coveredUpTo()
	if res.halted != nil || since.Before(res.fire) || since.After(upTo) {
		return
	}
	last := b.owed.lastOwed(res.item)
	if !last.After(upTo) {
		b.owed.forget(res.item)
		b.log.Debug("owed run settled", "item", res.item, "since", since, "by", res.kind, "fire", res.fire)
		return
	}
	next := last
	if sched, _, err := cfg.Schedule(); err == nil {
		if n := sched.Next(upTo); !n.IsZero() && n.Before(last) {
			next = n
		}
	}
	b.owed.owedFrom(res.item, next)
	b.log.Debug("owed run partly settled", "item", res.item, "since", next, "by", res.kind, "fire", res.fire)
}

// misfireNodeCovered reports whether item's misfire node, written here,
// goes with a completion of res (it covers the item's whole debt).
func (b *book) misfireNodeCovered(res itemResult) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	since, _ := b.owed.owed(res.item)
	return b.owed.hasNode(res.item) && res.covers(since)
}

// ---- stop ----

// owedRuns returns the runs this instance owes: every misfire, and for
// each held item the earlier of the fire missed while disconnected and
// upTo, when no fire here has taken upTo yet (unless paused: a paused
// server's fires are not owed, an operator held them). With held nil,
// the items given up by the leave are held.
func (b *book) owedRuns(held []int, upTo time.Time, cfg *spec, disabled map[int]bool, paused bool, from string) []failover.Entry {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.owedRunsLocked(held, upTo, cfg, disabled, paused, from)
}

func (b *book) owedRunsLocked(held []int, upTo time.Time, cfg *spec, disabled map[int]bool, paused bool, from string) []failover.Entry {
	since := map[int]time.Time{}
	owe := func(it int, at time.Time) {
		if at.IsZero() || it < 0 || it >= cfg.ShardingTotalCount || disabled[it] {
			return
		}
		if prev, ok := since[it]; !ok || at.Before(prev) {
			since[it] = at
		}
	}
	for it, at := range b.owed.debts() {
		owe(it, at)
	}
	for _, it := range held {
		owe(it, b.owed.missedWhileDown())
		if !upTo.IsZero() && !paused && b.owed.dispatchedAt(it).Before(upTo) {
			owe(it, upTo)
		}
	}
	owed := make([]failover.Entry, 0, len(since))
	for it, at := range since {
		owed = append(owed, failover.Entry{Item: it, Fire: at.UnixMilli(), From: from})
	}
	sort.Slice(owed, func(i, j int) bool { return owed[i].Item < owed[j].Item })
	return owed
}

// left records a leave that gave up held and handed owed over: their
// debts and the fires missed while disconnected went with it.
func (b *book) left(held []int, owed []failover.Entry) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reg.heldAtLeave = held
	for _, e := range owed {
		b.owed.forget(e.Item)
	}
	b.owed.takeMissed() // handed over with the assignment
}

// heldAtLeaveAny reports whether the leave gave up any item.
func (b *book) heldAtLeaveAny() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.reg.heldAtLeave) > 0
}

// handOverRest returns what is still owed once the runs have ended, for
// the items the leave gave up, and forgets every debt.
func (b *book) handOverRest(cfg *spec, disabled map[int]bool, paused bool, from string) []failover.Entry {
	b.mu.Lock()
	defer b.mu.Unlock()
	owed := b.owedRunsLocked(b.reg.heldAtLeave, time.Time{}, cfg, disabled, paused, from)
	b.owed.forgetAll()
	return owed
}

// closeWaits ends nothing itself: it returns the cancels of every wait on
// a mark elsewhere, and drops them, for stop to call.
func (b *book) closeWaits() []func() {
	b.mu.Lock()
	defer b.mu.Unlock()
	cancels := make([]func(), 0, len(b.remoteWaits))
	for _, c := range b.remoteWaits {
		cancels = append(cancels, c)
	}
	b.remoteWaits = map[int]func(){}
	return cancels
}
