package job

import "github.com/shardjob/shardjob/job/internal/fireplan"

// The catch-up. A fire takes its assignment from the previous fire's read
// (proved by its own transaction, or by the sharding node's watch when it
// holds no items: see assigned.Source) or reads it, and a reshard due at
// that fire can commit a moment later — the leader reshards at its own
// fire, and an instance that joins flags a reshard at any time. When that
// reshard gives this instance items, their previous owner has let the fire
// pass as well (it read or proved its assignment after the reshard, or
// waited for it): without a catch-up they would wait for the next fire, a
// whole period later, and an item with no record yet (a new job's first
// fire) would never be found owing it. So every scheduled fire notes
// itself as passed (Cache.NotePass), and when the watch reports the node
// written while that fire is still the latest, the instance reads its
// assignment at once and owes the newly held items that fire (from their
// earliest uncovered fire, as the next fire would have found), but for
// those whose record, just read, lists it. The pass may have been ahead of
// the fire's time (a fire's lead): the run then waits for it (see
// firing.Firer.StartRuns). The run is a make-up run: marked first and then
// narrowed by the items' completed records (firing.Firer.StillOwed), so a
// fire that another instance ran before the reshard moved the item is not
// run again.

// goCatchUp runs catchUp on a goroutine that stop waits for as for a
// fire in flight.
func (r *runner) goCatchUp() { r.goFiring(r.catchUp) }

// catchUp owes the latest fire, which this instance let pass without
// them, to the items a reshard gave it since, and runs them.
func (r *runner) catchUp() {
	act := r.active()
	release := act.firer.Order.Hold()
	at := act.cache.TakePass()
	if at.IsZero() || r.flags.Paused() {
		release()
		return
	}
	cfg := r.config()
	sched, _, err := cfg.Schedule()
	if err != nil || cfg.Unmonitored || cfg.book.SkipsMissed || !fireplan.Due(sched, r.s.opts.now(), r.s.opts.fireLead).Equal(at) {
		// The next fire has come (it reads the assignment and finds the
		// gap itself), or the job keeps no records to narrow a make-up
		// run by, or its policy drops missed fires.
		release()
		return
	}
	// The fire stays the latest until the next one starts, which it cannot
	// while the fire order is held: a later reshard owes it too, the items
	// this catch-up does not see.
	unlock := release
	release = func() {
		act.cache.NotePass(at)
		unlock()
	}
	sess, ok := r.readyToFire()
	if !ok {
		release()
		return
	}
	a, err := act.assigned.Get(sess)
	if err != nil {
		release()
		r.log.Warn("reading the assignment after a reshard; the next fire reads it again", "err", err)
		return
	}
	gaps, fresh := r.inheritedGaps(sess, at, a)
	ran, _, _ := r.ranBefore(cfg, at, fresh)
	disabled := r.flags.DisabledItems()
	owed := fresh[:0:0]
	for _, it := range fresh {
		if disabled[it] || ran[it] {
			continue
		}
		owed = append(owed, it)
		r.book.NoteCatchUp(cfg.book, it, at, gaps[it])
	}
	release()
	if len(owed) > 0 {
		r.log.Info("items gained after a fire passed: running that fire now", "items", owed, "fire", at)
	}
	act.firer.RunOwed(sess)
}
