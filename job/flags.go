package job

import (
	"context"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

// The operator's flags for this server (job/internal/flags): their reading
// is the room's; what they start, and the events they give, are here.

// checkFlags reads this server's flags after any of them changed: paused
// stops firing here, shutdown makes this instance leave the job, trigger runs
// the job once now (queued if items are running), backfill runs the job's
// backfill (backfill.go).
func (r *runner) checkFlags() {
	sess := r.rc.Session()
	ctx, cancel := context.WithTimeout(sess.Ctx(), r.s.opts.reshardTimeout)
	defer cancel()
	seen, ok := r.flags.Read(ctx, sess)
	if !ok {
		return
	}
	if !seen.Status {
		r.restoreStatus(ctx, sess)
	}
	if stopping := r.setPaused(seen.Paused); stopping {
		return
	}
	if r.flags.SetDisabled(seen.Disabled) { // only the event is this instance's to give
		kind := EventEnabled
		if seen.Disabled {
			kind = EventDisabled
		}
		r.s.emit(Event{Kind: kind, Job: r.name})
	}
	if seen.Shutdown {
		r.log.Info("shutdown flag set: leaving the job")
		r.goFunc(func() { r.s.removeRunner(r, false) })
		return
	}
	if seen.Backfill && r.flags.TakeBackfill(ctx) {
		r.kick.Kick(kickBackfill)
	}
	if seen.Trigger && r.flags.TakeTrigger(ctx) {
		if r.book.QueueTriggerIfBusy() {
			r.log.Info("trigger queued until the running items finish")
			return
		}
		r.fireTriggered()
	}
}

// setPaused records the paused flag; it reports whether the job is
// stopping here.
func (r *runner) setPaused(paused bool) (stopping bool) {
	changed := r.flags.SetPaused(paused)
	stopping = r.book.Stopping()
	if changed {
		r.log.Info("pause flag changed", "paused", paused)
		kind := EventResumed
		if paused {
			kind = EventPaused
		}
		r.s.emit(Event{Kind: kind, Job: r.name})
	}
	return stopping
}

// restoreStatus re-creates this instance's status node when it vanished
// while the instance is registered under a live session
// (flags.Flags.RestoreStatus).
func (r *runner) restoreStatus(ctx context.Context, sess *regcenter.Session) {
	r.flags.RestoreStatus(ctx, sess, r.book.RegisteredUnder(sess))
}

// fireTriggered runs this server's items once now.
func (r *runner) fireTriggered() {
	if err := r.prepareSync(); err != nil {
		r.log.Warn("preparing to run a trigger", "err", err)
	}
	sess, ok := r.readyToFire()
	if !ok {
		r.log.Warn("trigger dropped: not connected to the registry")
		return
	}
	r.log.Info("triggered: running once now")
	r.fireAssigned(sess, r.s.opts.now().Truncate(time.Millisecond), KindTrigger, nil)
}

// readDisabledItems refreshes the set of items kept out of every fire.
func (r *runner) readDisabledItems() { r.flags.ReadDisabledItems(r.rc.Session()) }
