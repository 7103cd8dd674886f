package job

import (
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/assume"
	"github.com/shardjob/shardjob/job/internal/book"
	"github.com/shardjob/shardjob/regcenter"
)

// A scheduled fire, top to bottom: the trigger dispatches it a lead ahead
// of its time (job/internal/trigger) and untilClaim (runner.go) lets it
// claim early in the steady state; fireScheduled (is this instance able to fire:
// connected, not paused, clock in bounds) → fireAssigned (assume the
// assignment the previous fire read, or read it: assignment.go) →
// fireItems (find inherited gaps, reserve the items in the book:
// job/internal/book; prove the assumption in the marking transaction:
// mark.go) → startRuns (execute.go) → completion.Completer.All → runOwed
// (owed.go). From fireItems on, the fire is a value (fire, execute.go)
// passed from stage to stage.
//
// The other paths into the same stages, named for what starts them:
// fireTriggered (flags.go: a trigger, reserveAndRun), fireMissedWhileDown
// (runner.go: fires skipped while disconnected), runOwed and runMakeUps
// (owed.go: debts of this instance, markAndRun), claimFailover
// (failover.go: another instance's debts, markAndRun).

// readyToFire returns the session to fire under, or false when this
// instance must not fire now.
func (r *runner) readyToFire() (*regcenter.Session, bool) {
	sess := r.rc.Session()
	if !r.book.RegisteredUnder(sess) || sess.Check() != nil || r.s.suspended.Load() {
		return nil, false
	}
	return sess, true
}

// fireOrder makes scheduled fires reserve their items in fire order: a
// fire held up in coordination (a slow registry, a reshard) would otherwise
// find its item taken by the next fire, owe a run, and its make-up run
// would run that next fire again; and a fire that overtook fires still
// waiting would have them find the item run here through it
// (fireplan.RunHere), and run nothing. A mutex alone does not keep that
// order: a fire that comes as the holder lets go can take it before the
// fires that waited. So each scheduled fire takes a turn when the trigger
// dispatches it (enter, on the trigger's goroutine: in fire order), and
// waits for the turns before it to be over (await) before it takes the
// mutex; the mutex also keeps a catch-up (hold) apart from the fires. The
// make-up runs of fires missed while down and of debts (runOwed) take
// turns too, after the fires dispatched before them that are due
// (awaitDue): a fire dispatched ahead of its time and waiting for it
// (untilClaim, nap) is not one of them. A debt left by a run that ended
// just before the next fire's time is made up then, through the fires
// due within the lead, and is not held until that fire's time, where a
// starting deadline could drop it.
type fireOrder struct {
	mu sync.Mutex

	turns sync.Mutex // guards the fields below
	last  uint64     // the latest turn given
	// waiting are the turns given and not over, in order.
	waiting []uint64
	// napping are the turns of fires waiting for their time (nap).
	napping map[uint64]bool
	// moved is closed when a turn is over or starts to nap (nil: nobody
	// waits for that).
	moved chan struct{}
}

// hold waits for the fire reserving now, if any, to have reserved its
// items, and returns what lets the next fire go.
func (o *fireOrder) hold() (release func()) {
	o.mu.Lock()
	return o.mu.Unlock
}

// enter gives a scheduled fire its turn, after every turn given before.
func (o *fireOrder) enter() uint64 {
	o.turns.Lock()
	defer o.turns.Unlock()
	o.last++
	o.waiting = append(o.waiting, o.last)
	return o.last
}

// await waits until every turn before turn is over, or stop is closed.
// Turn 0 waits for none (a fire called without one).
func (o *fireOrder) await(turn uint64, stop <-chan struct{}) {
	o.wait(turn, false, stop)
}

// awaitDue is await for a make-up run: it waits for the turns before
// turn that are due, and passes those napping (waiting for their time).
func (o *fireOrder) awaitDue(turn uint64, stop <-chan struct{}) {
	o.wait(turn, true, stop)
}

func (o *fireOrder) wait(turn uint64, passNapping bool, stop <-chan struct{}) {
	for {
		o.turns.Lock()
		if o.clearLocked(turn, passNapping) {
			o.turns.Unlock()
			return
		}
		if o.moved == nil {
			o.moved = make(chan struct{})
		}
		moved := o.moved
		o.turns.Unlock()
		select {
		case <-moved:
		case <-stop:
			return
		}
	}
}

// clearLocked reports whether no turn before turn stands in its way.
func (o *fireOrder) clearLocked(turn uint64, passNapping bool) bool {
	for _, t := range o.waiting {
		if turn == 0 || t >= turn {
			return true
		}
		if !passNapping || !o.napping[t] {
			return false
		}
	}
	return true
}

// nap marks turn's fire as waiting for its time, until wake is called:
// make-up runs pass it (awaitDue) meanwhile.
func (o *fireOrder) nap(turn uint64) (wake func()) {
	if turn == 0 {
		return func() {}
	}
	o.turns.Lock()
	if o.napping == nil {
		o.napping = map[uint64]bool{}
	}
	o.napping[turn] = true
	o.movedLocked()
	o.turns.Unlock()
	return func() {
		o.turns.Lock()
		delete(o.napping, turn)
		o.turns.Unlock()
	}
}

// leave ends turn: the fire has reserved its items, or gave up its turn
// without reserving any. Ending a turn again does nothing.
func (o *fireOrder) leave(turn uint64) {
	o.turns.Lock()
	defer o.turns.Unlock()
	i := slices.Index(o.waiting, turn)
	if i < 0 {
		return
	}
	o.waiting = slices.Delete(o.waiting, i, i+1)
	delete(o.napping, turn)
	o.movedLocked()
}

// movedLocked wakes the waiters of await and awaitDue.
func (o *fireOrder) movedLocked() {
	if o.moved != nil {
		close(o.moved)
		o.moved = nil
	}
}

// fireScheduled is one fire of the schedule. skipped, when not zero, is
// the first of the fires before at that the trigger collapsed into it
// (see skippedBefore): they are made up with this one, as fires skipped
// while disconnected are. It waits for no turn of the fire order: see
// fireInTurn.
func (r *runner) fireScheduled(at, skipped time.Time) { r.fireInTurn(at, skipped, 0) }

// fireInTurn is fireScheduled for the fire given turn in the fire order
// (fireOrder.enter): it reserves its items once the fires dispatched
// before it have, and ends its turn then (or as it returns).
func (r *runner) fireInTurn(at, skipped time.Time, turn uint64) {
	defer r.order.leave(turn)
	if r.flags.Paused() {
		return // an operator paused this server: its items stay put
	}
	if err := r.s.inst.ClockError(r.config().MaxTimeDiff); err != nil {
		r.log.Error("fire refused", "fire", at, "err", err)
		return
	}
	if !skipped.IsZero() {
		r.log.Warn("fires were not dispatched while the process could not run; making them up with this one", "since", skipped, "fire", at)
		r.book.NoteSuspendedMiss(skipped)
	}
	// The fires dispatched before this one reserve first (a stop ends the
	// wait: the fire then finds the job stopping).
	r.order.await(turn, r.ctx.life.Done())
	// Released once: when the fire has reserved its items, or as it
	// returns. Every call is on this goroutine, so a flag is all the once
	// it needs (a closure that does not escape: no allocation per fire).
	r.order.mu.Lock()
	held := true
	reserved := func() {
		if held {
			held = false
			r.order.mu.Unlock()
			r.order.leave(turn)
		}
	}
	defer reserved()
	r.cache.PassIdle(time.Time{}) // this fire reads for itself what an idle pass skipped
	sess, ok := r.readyToFire()
	if !ok {
		if !r.book.Stopping() {
			r.log.Warn("fire skipped: not connected to the registry; it will run once reconnected", "fire", at)
			r.book.NoteSuspendedMiss(at)
		}
		return
	}
	if missed := r.book.TakeMissed(); !missed.IsZero() {
		// Fires skipped earlier (an assignment that could not be read,
		// fires the trigger collapsed) are made up now, with this one,
		// from the earlier of the two. This fire may come before the
		// fires it takes: held up behind a fire slow in coordination, it
		// finds the fires a later fire noted as collapsed before waiting
		// for the fire order. A make-up run from those alone would stand
		// for neither this fire nor the fires dispatched between, which
		// then find the item run here through them (fireplan.RunHere).
		since := missed
		if at.Before(since) {
			since = at
		}
		r.log.Info("making up for fires skipped earlier", "since", since, "fire", at)
		r.fireAssigned(sess, since, KindMisfire, reserved)
		return
	}
	r.fireAssigned(sess, at, KindFire, reserved)
}

// reserved, when not nil, is called once this fire's items are reserved
// (or it reserves none).
func (r *runner) fireAssigned(sess *regcenter.Session, at time.Time, kind Kind, reserved func()) {
	if reserved == nil {
		reserved = func() {}
	}
	if kind == KindFire {
		// Steady state: fire on what the previous fire read, proved by
		// this fire's own transaction; read again only if that fails.
		// A failed proof leaves nothing behind (see fireItems), and this
		// fire still holds the fire order for the fresh read.
		if a, ok := r.cachedAssignment(sess); ok {
			unmonitored := r.config().Unmonitored
			if a.Watched && len(a.Items) > 0 && (unmonitored || r.holds.HoldsAll(sess, a.Items)) {
				// The watches say nothing changed, and the fire marks
				// nothing: the job writes nothing per fire, or this
				// instance holds every item's mark (hold.go). It runs
				// without a request before its items (assume).
				_ = r.fireItems(sess, at, a, reserved, false) // unproved, it returns nil
				r.runOwed(sess)
				return
			}
			if a.Watched && len(a.Items) == 0 && (unmonitored || !r.elect.IsLeader()) {
				// Nothing held, and the watch says nothing changed. (A
				// monitored job's leader proves as before: its failed
				// proof is what reshards when a reshard is due; an
				// unmonitored job's watches the epoch for that.) A reshard
				// committed after this pass gives the fire back
				// (catchUpIdle).
				r.cache.PassIdle(at)
				reserved()
				r.runOwed(sess)
				return
			}
			if r.fireOnProof(sess, at, a, reserved) {
				return
			}
		}
	}
	a, err := r.assignment(sess)
	if err != nil {
		r.log.Warn("fire skipped: cannot read assignment; the next fire makes up for it", "fire", at, "err", err)
		r.book.NoteSuspendedMiss(at)
		return
	}
	items := a.Items
	if kind == KindFire {
		// What was just read is proved too, when it can be, by the first
		// marking transaction: a reshard between the read and the marks
		// would otherwise have this fire mark items now another
		// instance's, which holds their marks (hold.go), and owe each of
		// them, one failed transaction at a time.
		for attempt := 0; a.Epoch >= -1 && len(a.Items) > 0 && !r.config().Unmonitored && attempt < 2; attempt++ {
			if r.fireOnProof(sess, at, a, reserved) {
				return
			}
			if a, err = r.assignment(sess); err != nil {
				r.log.Warn("fire skipped: cannot read assignment; the next fire makes up for it", "fire", at, "err", err)
				r.book.NoteSuspendedMiss(at)
				return
			}
		}
		_ = r.fireItems(sess, at, a, reserved, false) // unproved, it returns nil
		r.runOwed(sess)
		return
	}
	if kind == KindMisfire {
		// Fires missed while disconnected, since at and through the latest.
		cfg := r.config()
		// Items newly held here may owe earlier fires their previous
		// owner left undone, as at a plain fire (fireItems): owed here,
		// the make-up run takes them in (Book.AbsorbDebts), from the gap.
		gaps, _ := r.inheritedGaps(sess, at, a)
		for it, since := range gaps {
			if since.Before(at) {
				r.book.NoteMisfire(cfg.book, it, since)
			}
		}
		todo := r.book.Reserve(cfg.book, items, at, r.makeUpThrough(cfg, at), book.Misfire, r.flags.DisabledItems())
		reserved()
		r.markAndRun(&fire{sess: sess, cfg: cfg, at: at, kind: KindMisfire, items: todo, mayHaveRun: r.inherit.Take(todo)})
	} else {
		r.reserveAndRun(&fire{sess: sess, at: at, kind: kind, items: items})
	}
	r.runOwed(sess)
}

// fireOnProof fires a's items, proved by the fire's first transaction,
// and reports true when that ends the fire: it ran, or could not be proved
// for another reason than a moved assignment (it is then owed). On false
// the assignment moved: nothing ran, and the caller reads it again.
func (r *runner) fireOnProof(sess *regcenter.Session, at time.Time, a assume.Assignment, reserved func()) bool {
	err := r.fireItems(sess, at, a, reserved, true)
	switch {
	case err == nil:
		r.runOwed(sess)
	case errors.Is(err, errAssignmentMoved):
		return false
	default:
		r.log.Warn("fire skipped: cannot prove assignment; the next fire makes up for it", "fire", at, "err", err)
		r.book.NoteSuspendedMiss(at)
	}
	return true
}

// fireItems runs a scheduled fire's items. An item that owes earlier fires
// — fires its previous owner did not complete, or a debt of this instance —
// runs as a make-up run since the earliest of them, through this fire: run
// as a plain fire, its completion would record this fire as its latest and
// a make-up run after it would find the earlier fires covered, or run this
// one again. Reserving and choosing happen under one lock, so an item that
// becomes free meanwhile cannot be taken as a plain fire with its debt left
// behind.
//
// With prove, a is an assumption (see assume.Assignment) and this fire's first
// transaction proves it: the marks of the plain items carry the checks, or
// the checks go alone when there is nothing to mark. Until it is proved
// nothing starts, and if it fails everything reserved is put back and
// errAssignmentMoved returned, for the caller to read the assignment and
// fire again; reserved is then not called. Without prove it returns nil.
func (r *runner) fireItems(sess *regcenter.Session, at time.Time, a assume.Assignment, reserved func(), prove bool) error {
	cfg := r.config()
	heldBefore := r.cache.Held()
	gaps, fresh := r.inheritedGaps(sess, at, a)
	ran, known, unrecorded := r.ranBefore(cfg, at, fresh)
	if len(ran) > 0 {
		r.log.Info("items gained in a reshard already ran this fire on their previous owner", "items", layout.FormatItems(slices.Sorted(maps.Keys(ran))), "fire", at)
	}
	res := r.book.ReserveFire(cfg.book, a.Items, at, gaps, ran, r.flags.DisabledItems())
	f := &fire{sess: sess, cfg: cfg, at: at, kind: KindFire, items: res.Plain, known: known, unrecorded: unrecorded}
	if prove {
		checks := a.Proof
		if checks == nil {
			checks = a.Checks(r.paths, r.serverID())
		}
		marked, err := r.proveAndMark(f, checks)
		if err != nil {
			r.book.Undo(res)
			r.cache.RestoreHeld(heldBefore) // the fire order is still held: no other fire moved it
			return err
		}
		f.items = marked
	}
	reserved()
	var done chan struct{}
	if len(res.Debts) > 0 { // the steady state owes nothing: no goroutine
		done = make(chan struct{})
		go func() { // owned here: waited for below
			defer close(done)
			r.runMakeUps(sess, cfg, res.Debts, "making up for owed fires with this one")
		}()
	}
	if prove {
		r.startRuns(f, nil) // marked with the proof
	} else {
		r.markAndRun(f)
	}
	if done != nil {
		<-done
	}
	return nil
}

// proveAndMark sends a fire's proof (checks) with the running marks of its
// plain items (f's), or alone when it marks nothing: no items, every item still
// busy, or an unmonitored job. A fire must prove its assumption even then,
// or an instance whose items stay busy would never learn that a reshard
// moved them. It returns the items marked; on an error nothing is marked
// and the items are still reserved (but for those markRunning dropped:
// running elsewhere, they are owed and released).
func (r *runner) proveAndMark(f *fire, checks []regcenter.Op) ([]int, error) {
	if len(f.items) == 0 || f.cfg.Unmonitored {
		ok, err := r.proveAssignment(f.sess, checks)
		if err == nil && !ok {
			err = errAssignmentMoved
		}
		return f.items, err
	}
	ctx, cancel := r.coordCtx(f.sess)
	defer cancel()
	marked, err := r.markRunning(ctx, f, checks, f.known, markOutcomes{r: r, f: f})
	if errors.Is(err, errAssignmentMoved) {
		r.forgetAssignment()
	}
	return marked, err
}
