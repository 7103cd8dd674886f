package job

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// checkFlags reads this server's flags after any of them changed: paused
// stops firing here, shutdown makes this instance leave the job, trigger runs
// the job once now (queued if items are running).
func (r *runner) checkFlags() {
	sess := r.rc.Session()
	ctx, cancel := context.WithTimeout(sess.Ctx(), r.s.opts.reshardTimeout)
	defer cancel()
	kids, err := r.rc.Children(ctx, r.paths.Server(r.serverID()))
	if err != nil {
		if !errors.Is(err, regcenter.ErrNoNode) && sess.Err() == nil {
			r.log.Warn("reading server flags", "err", err)
		}
		return
	}
	if !slices.Contains(kids, layout.Status) {
		r.restoreStatus(ctx, sess)
	}
	if stopping := r.setPaused(slices.Contains(kids, layout.Paused)); stopping {
		return
	}
	r.setDisabled(slices.Contains(kids, layout.Disabled))
	if slices.Contains(kids, layout.Shutdown) {
		r.log.Info("shutdown flag set: leaving the job")
		r.goFunc(func() { r.s.removeRunner(r, false) })
		return
	}
	if slices.Contains(kids, layout.Trigger) {
		// Remove the flag first: a trigger runs once, and a new flag set
		// while this one runs is a new trigger.
		err := r.rc.Delete(ctx, r.paths.Flag(r.serverID(), layout.Trigger), -1)
		if err != nil && !errors.Is(err, regcenter.ErrNoNode) {
			r.log.Warn("removing trigger flag", "err", err)
			return
		}
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
	was := r.flags.paused.Swap(paused)
	stopping = r.book.Stopping()
	if paused != was {
		r.log.Info("pause flag changed", "paused", paused)
		kind := EventResumed
		if paused {
			kind = EventPaused
		}
		r.s.emit(Event{Kind: kind, Job: r.name})
	}
	return stopping
}

// setDisabled records this server's disabled flag for the job, as seen by
// the flags watch (the leader reads it for itself at each reshard): only
// the event is this instance's to give.
func (r *runner) setDisabled(disabled bool) {
	if was := r.flags.disabled.Swap(disabled); disabled == was {
		return
	}
	kind := EventEnabled
	if disabled {
		kind = EventDisabled
	}
	r.s.emit(Event{Kind: kind, Job: r.name})
}

// restoreStatus re-creates this instance's status node when it vanished
// while the instance is registered under a live session: someone deleted it
// (an operator, a script, a wrong recursive delete). Without it the leader
// takes this instance for gone and its items move, while it stays up and
// idle. Before the instance registered, or after its session ended, there
// is nothing to restore: registration creates the node.
func (r *runner) restoreStatus(ctx context.Context, sess *regcenter.Session) {
	if !r.book.RegisteredUnder(sess) || sess.Err() != nil {
		return
	}
	p := r.paths.Flag(r.serverID(), layout.Status)
	_, err := r.rc.Create(ctx, p, []byte(layout.StatusReady), regcenter.Ephemeral)
	switch {
	case err == nil:
		r.log.Warn("this instance's status node was deleted while it was online; restored it", "node", p)
	case errors.Is(err, regcenter.ErrNodeExists):
	default:
		r.log.Warn("restoring this instance's deleted status node", "node", p, "err", err)
	}
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
func (r *runner) readDisabledItems() {
	sess := r.rc.Session()
	ctx, cancel := context.WithTimeout(sess.Ctx(), r.s.opts.reshardTimeout)
	defer cancel()
	data, _, err := r.rc.Get(ctx, r.paths.DisabledItems())
	set := map[int]bool{}
	switch {
	case errors.Is(err, regcenter.ErrNoNode):
	case err != nil:
		if sess.Err() == nil {
			r.log.Warn("reading disabled items", "err", err)
		}
		return
	default:
		items, perr := layout.ParseItems(string(data))
		if perr != nil {
			r.log.Error("disabled-items node rejected; keeping the previous set", "err", perr)
			return
		}
		for _, it := range items {
			set[it] = true
		}
	}
	r.flags.items.Store(&set)
}

// jobFlags are this server's flags for the job, each read and replaced
// whole, with no lock: a fire reads them once, as they are at that moment.
type jobFlags struct {
	paused   atomic.Bool                  // servers/{me}/paused exists
	disabled atomic.Bool                  // servers/{me}/disabled exists (events only)
	items    atomic.Pointer[map[int]bool] // items kept out of every fire; never changed in place
}

// disabledItems returns the items kept out of every fire, nil for none.
// The map is never changed: readDisabledItems replaces it.
func (f *jobFlags) disabledItems() map[int]bool {
	if m := f.items.Load(); m != nil {
		return *m
	}
	return nil
}
