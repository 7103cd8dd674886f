package job

import (
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/assigned"
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
// firing.Firer.Mark) → Firer.StartRuns → completion.Completer.All →
// Firer.RunOwed. From fireItems on, the fire is a value (firing.Fire)
// passed from stage to stage (job/internal/firing).
//
// The other paths into the same stages, named for what starts them:
// fireTriggered (flags.go: a trigger, Firer.ReserveAndRun),
// fireMissedWhileDown (runner.go: fires skipped while disconnected), and
// the Firer's RunOwed (debts of this instance) and ClaimFailover (another
// instance's debts), each into Firer.MarkAndRun.

// readyToFire returns the session to fire under, or false when this
// instance must not fire now.
func (r *runner) readyToFire() (*regcenter.Session, bool) {
	sess := r.rc.Session()
	if !r.book.RegisteredUnder(sess) || sess.Check() != nil || r.s.suspended.Load() {
		return nil, false
	}
	return sess, true
}

// fireScheduled is one fire of the schedule. skipped, when not zero, is
// the first of the fires before at that the trigger collapsed into it
// (see skippedBefore): they are made up with this one, as fires skipped
// while disconnected are. It waits for no turn of the fire order: see
// fireInTurn.
func (r *runner) fireScheduled(at, skipped time.Time) { r.fireInTurn(at, skipped, 0) }

// fireInTurn is fireScheduled for the fire given turn in the fire order
// (runs.Order.Enter): it reserves its items once the fires dispatched
// before it have, and ends its turn then (or as it returns).
func (r *runner) fireInTurn(at, skipped time.Time, turn uint64) {
	act := r.active()
	defer act.firer.Order.Leave(turn)
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
	act.firer.Order.Await(turn, r.ctx.life.Done())
	if r.overtakenAtStart(at) {
		// Left to the fire that overtook it, which makes it up with itself
		// (TakeMissed below): one run instead of a backlog run in turn.
		r.log.Debug("fire due before Start returned, overtaken while it waited its turn; made up with the next", "fire", at)
		r.book.NoteSuspendedMiss(at)
		return
	}
	// Released once: when the fire has reserved its items, or as it
	// returns. Every call is on this goroutine, so a flag is all the once
	// it needs (a closure that does not escape: no allocation per fire).
	act.firer.Order.Lock()
	held := true
	reserved := func() {
		if held {
			held = false
			act.firer.Order.Unlock()
			act.firer.Order.Leave(turn)
		}
	}
	defer reserved()
	// This fire is the latest here: a reshard that writes this instance's
	// sharding node after the fire took its assignment — by assumption,
	// proof or read — may give it items whose owner then let the fire
	// pass, and owes them this fire (catchup.go).
	act.cache.NotePass(at)
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

// overtakenAtStart reports whether the fire at, its turn come, is part of
// the backlog of a start and a later fire is due already: it then leaves
// itself to that fire. The fires due while Start waits for its jobs'
// reshards (settle) wait with it, and each proves or reads its assignment
// once its turn comes; on a loaded registry that is tenths of a second a
// fire, and run one by one they would make the first fires after Start
// late. Only a fire due before Start returned leaves itself to the next,
// so a fire after it always runs: a fire slow in coordination later on
// delays the next, as it should, and cannot have every fire after it
// leave itself to the next in turn. A job that does not make up missed
// fires (misfire: skip), or an unmonitored one (no record to make up
// from), runs each fire as ever.
func (r *runner) overtakenAtStart(at time.Time) bool {
	if returned := r.s.startReturned.Load(); returned != 0 && !at.Before(time.Unix(0, returned)) {
		return false
	}
	latest := r.dispatched.Load()
	if latest <= at.UnixNano() || latest > r.s.opts.now().UnixNano() {
		return false // no later fire dispatched, or not due yet (a lead)
	}
	cfg := r.config()
	return !cfg.Unmonitored && !cfg.book.SkipsMissed && !r.book.Stopping()
}

// reserved, when not nil, is called once this fire's items are reserved
// (or it reserves none).
func (r *runner) fireAssigned(sess *regcenter.Session, at time.Time, kind Kind, reserved func()) {
	act := r.active()
	if reserved == nil {
		reserved = func() {}
	}
	if kind == KindFire {
		// Steady state: fire on what the previous fire read, proved by
		// this fire's own transaction; read again only if that fails.
		// A failed proof leaves nothing behind (see fireItems), and this
		// fire still holds the fire order for the fresh read.
		if a, ok := act.cache.Assumed(sess); ok {
			unmonitored := r.config().Unmonitored
			if a.Watched && len(a.Items) > 0 && (unmonitored || act.holds.HoldsAll(sess, a.Items)) {
				// The watches say nothing changed, and the fire marks
				// nothing: the job writes nothing per fire, or this
				// instance holds every item's mark (hold.go). It runs
				// without a request before its items (assigned.Source).
				_ = r.fireItems(sess, at, a, reserved, false) // unproved, it returns nil
				act.firer.RunOwed(sess)
				return
			}
			if a.Watched && len(a.Items) == 0 && (unmonitored || !act.elect.IsLeader()) {
				// Nothing held, and the watch says nothing changed. (A
				// monitored job's leader proves as before: its failed
				// proof is what reshards when a reshard is due; an
				// unmonitored job's watches the epoch for that.) A reshard
				// committed after this pass gives the fire back
				// (catchUp, from the pass noted as the fire began).
				reserved()
				act.firer.RunOwed(sess)
				return
			}
			if r.fireOnProof(sess, at, a, reserved) {
				return
			}
		}
	}
	a, err := act.assigned.Get(sess)
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
		for attempt := 0; a.Epoch > assigned.Unproved && len(a.Items) > 0 && !r.config().Unmonitored && attempt < 2; attempt++ {
			if r.fireOnProof(sess, at, a, reserved) {
				return
			}
			if a, err = act.assigned.Get(sess); err != nil {
				r.log.Warn("fire skipped: cannot read assignment; the next fire makes up for it", "fire", at, "err", err)
				r.book.NoteSuspendedMiss(at)
				return
			}
		}
		_ = r.fireItems(sess, at, a, reserved, false) // unproved, it returns nil
		act.firer.RunOwed(sess)
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
		todo := r.book.Reserve(cfg.book, items, at, act.firer.MakeUpThrough(cfg.fireJob(), at), book.Misfire, r.flags.DisabledItems())
		reserved()
		act.firer.MarkAndRun(&fire{Sess: sess, Job: cfg.fireJob(), At: at, Kind: book.Misfire, Items: todo,
			MayHaveRun: act.inherit.Take(todo), FailedAttempts: act.inherit.FailedOf(todo)})
	} else {
		act.firer.ReserveAndRun(&fire{Sess: sess, At: at, Kind: bookKind(kind), Items: items})
	}
	act.firer.RunOwed(sess)
}

// fireOnProof fires a's items, proved by the fire's first transaction,
// and reports true when that ends the fire: it ran, or could not be proved
// for another reason than a moved assignment (it is then owed). On false
// the assignment moved: nothing ran, and the caller reads it again.
func (r *runner) fireOnProof(sess *regcenter.Session, at time.Time, a assume.Assignment, reserved func()) bool {
	act := r.active()
	err := r.fireItems(sess, at, a, reserved, true)
	switch {
	case err == nil:
		act.firer.RunOwed(sess)
	case errors.Is(err, assume.ErrMoved):
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
// assume.ErrMoved returned, for the caller to read the assignment and
// fire again; reserved is then not called. Without prove it returns nil.
func (r *runner) fireItems(sess *regcenter.Session, at time.Time, a assume.Assignment, reserved func(), prove bool) error {
	act := r.active()
	cfg := r.config()
	heldBefore := act.cache.Held()
	gaps, fresh := r.inheritedGaps(sess, at, a)
	ran, known, unrecorded := r.ranBefore(cfg, at, fresh)
	if len(ran) > 0 {
		r.log.Info("items gained in a reshard already ran this fire on their previous owner", "items", layout.FormatItems(slices.Sorted(maps.Keys(ran))), "fire", at)
	}
	res := r.book.ReserveFire(cfg.book, a.Items, at, gaps, ran, r.flags.DisabledItems())
	f := &fire{Sess: sess, Job: cfg.fireJob(), At: at, Kind: book.Fire, Items: res.Plain, Known: known, Unrecorded: unrecorded}
	if !cfg.Unmonitored {
		r.proveUnheld(f, fresh)
	}
	if prove {
		checks := a.Proof
		if checks == nil {
			checks = a.Checks(r.paths, r.serverID())
		}
		marked, err := r.proveAndMark(f, checks)
		if err != nil {
			r.book.Undo(res)
			act.cache.RestoreHeld(heldBefore) // the fire order is still held: no other fire moved it
			return err
		}
		f.Items = marked
	}
	reserved()
	var done chan struct{}
	if len(res.Debts) > 0 { // the steady state owes nothing: no goroutine
		done = make(chan struct{})
		go func() { // owned here: waited for below
			defer close(done)
			act.firer.RunMakeUps(sess, cfg.fireJob(), res.Debts, "making up for owed fires with this one")
		}()
	}
	if prove {
		act.firer.StartRuns(f, nil) // marked with the proof
	} else {
		act.firer.MarkAndRun(f)
	}
	if done != nil {
		<-done
	}
	return nil
}

// proveUnheld adds to a fire's records to prove (Known) those of its plain
// items held here since the previous fire whose marks this instance does
// not hold, as far as it knows them, and the others to Unrecorded (read
// again once marked). Held throughout, such an item was free meanwhile —
// its mark went when a completion found the assumption gone, the way of an
// instance whose reads cannot be proved under load — and another instance
// may have run its fires: a make-up of a debt it kept after a reshard
// moved the item here, which stands for every fire due then, this one
// included. The marking transaction proves the record unchanged, or the
// item runs as a make-up run narrowed by it (outcomes.RecordChanged); a
// fire of held marks, the steady state, adds nothing.
func (r *runner) proveUnheld(f *fire, fresh []int) {
	if len(f.Items) == 0 || r.active().holds.HoldsAll(f.Sess, f.Items) {
		return
	}
	held := r.active().holds.HeldOf(f.Sess, f.Items)
	if held == nil {
		held = make(map[int]bool, len(fresh))
	}
	for _, it := range fresh {
		held[it] = true // read at this fire already (ranBefore)
	}
	var unheld []int
	for _, it := range f.Items {
		if !held[it] {
			unheld = append(unheld, it)
		}
	}
	if len(unheld) == 0 {
		return
	}
	provable := r.records.Provable(unheld)
	for _, it := range unheld {
		rec, ok := provable[it]
		if !ok {
			f.Unrecorded = append(f.Unrecorded, it)
			continue
		}
		if f.Known == nil {
			f.Known = map[int]record{}
		}
		f.Known[it] = rec
	}
}

// proveAndMark sends a fire's proof (checks) with the running marks of its
// plain items (f's), or alone when it marks nothing: no items, every item still
// busy, or an unmonitored job. A fire must prove its assumption even then,
// or an instance whose items stay busy would never learn that a reshard
// moved them. It returns the items marked; on an error nothing is marked
// and the items are still reserved (but for those the marking dropped:
// running elsewhere, they are owed and released).
func (r *runner) proveAndMark(f *fire, checks []regcenter.Op) ([]int, error) {
	act := r.active()
	if len(f.Items) == 0 || f.Job.Unmonitored {
		ok, err := act.assigned.Prove(f.Sess, checks)
		if err == nil && !ok {
			err = assume.ErrMoved
		}
		return f.Items, err
	}
	ctx, cancel := r.coordCtx(f.Sess)
	defer cancel()
	marked, err := act.firer.Mark(ctx, f, checks, f.Known)
	if errors.Is(err, assume.ErrMoved) {
		act.assigned.Forget()
	}
	return marked, err
}
