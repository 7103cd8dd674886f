package job

import "github.com/shardjob/shardjob/job/internal/fireplan"

// The idle catch-up. An instance that holds no items lets a fire pass
// without a request, on its sharding node's watch (see assigned.Source).
// A reshard due at that fire commits a moment later — the leader reshards
// at its own fire — and when it gives this instance items, their owner has
// already let the fire pass: without a catch-up they would wait for the
// next fire, a whole period after an instance died. So when the watch
// reports the node written after such a pass, and the pass is still the
// latest fire, the instance reads its assignment at once and owes the
// newly held items the fire it passed (from their earliest uncovered fire,
// as the next fire would have found). The pass may have been ahead of the
// fire's time (a fire's lead): the run then waits for it (see firing.Firer.StartRuns). The
// run is a make-up run: marked first and then narrowed by the items'
// completed records (firing.Firer.StillOwed), so a fire that another instance ran
// before the reshard moved the item is not run again.

// goCatchUp runs catchUpIdle on a goroutine that stop waits for as for a
// fire in flight.
func (r *runner) goCatchUp() { r.goFiring(r.catchUpIdle) }

// catchUpIdle owes the fire this instance let pass as an idle instance to
// the items a reshard gave it since, and runs them.
func (r *runner) catchUpIdle() {
	act := r.active()
	release := act.firer.Order.Hold()
	at := act.cache.TakeIdlePass()
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
	disabled := r.flags.DisabledItems()
	for _, it := range fresh {
		if disabled[it] {
			continue
		}
		since := at
		if g, ok := gaps[it]; ok && g.Before(since) {
			since = g
		}
		r.book.NoteMisfire(cfg.book, it, since)
	}
	release()
	if len(fresh) > 0 {
		r.log.Info("items gained after a fire passed idle: running that fire now", "items", fresh, "fire", at)
	}
	act.firer.RunOwed(sess)
}
