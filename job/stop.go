package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardjob/shardjob/job/internal/leaving"
)

// stop is the job's part of a graceful shutdown: no new fires; running
// items finish until ctx ends and are then cancelled (and, with failover on,
// queued for another instance); leadership is released; this instance's
// nodes are removed and a reshard is flagged, so the others take its items
// at their next fire without waiting for a session timeout.
func (r *runner) stop(ctx context.Context) error {
	// Every part ends here, whether the job ever worked or not: its
	// active parts are made now if nothing made them (active.go), so that
	// whatever makes them meanwhile finds them made and ending too.
	a := r.active()
	r.book.BeginStop()
	r.s.alert.book.Forget(r.name)
	r.ctx.cancelLife()
	r.s.trig.Remove(r.name)
	r.stopPrepare()

	// Cleanup gets its own bounded time even if ctx is spent: leaving the
	// registry clean is what lets the others take over immediately. But
	// never past ctx's deadline and stopGrace: the caller's deadline holds
	// whatever the registry does (with it gone, every call below waits
	// for its context).
	cleanupBy := func() (context.Context, context.CancelFunc) { return cleanupContext(ctx, r.sessionTimeout()) }
	cctx, cancel := cleanupBy()
	defer cancel()

	// Leave first, while items may still be running: the others reshard at
	// their next fire, so this instance's idle items are not left without an
	// owner while its busy ones finish. The busy ones keep their running
	// marks; a new owner finds them and runs the item once they are gone.
	var errs []error
	lv := r.leaver(a)
	registered, removed := r.book.Leaving()
	cfg := r.config()
	handOver := registered && !removed && cfg.Failover
	if registered {
		if err := lv.Leave(cctx, cfg.book, !removed, handOver); err != nil {
			errs = append(errs, err)
		}
	}

	// The marks kept for idle items go now: the others reshard at their
	// next fire and must find them gone. Busy items' marks go with their
	// completions.
	a.held.Release(cctx, r.rc.Session(), nil)

	if !r.book.WaitIdle(ctx) {
		a.cancelExec(ErrSchedulerClosed)
		errs = append(errs, fmt.Errorf("running items cancelled: %w", ctx.Err()))
		// Give cancelled items a moment to return and hand themselves over
		// (their completions write to the registry), within the cleanup's
		// bound.
		grace, gcancel := context.WithTimeout(cctx, 2*time.Second)
		if !r.book.WaitIdle(grace) {
			if n := r.counters.executing.Load(); n > 0 {
				errs = append(errs, fmt.Errorf("%d runs ignore their context and are still running", n))
			} else {
				errs = append(errs, errors.New("the completions of cancelled runs were still waiting on the registry"))
			}
		}
		gcancel()
	}
	// The rest of the cleanup gets its own bounded time too (the wait for
	// running items may have used up the first), within ctx's deadline.
	cancel()
	cctx, cancel = cleanupBy()
	defer cancel()
	// Fires in flight when the stop began end at once (no new marks: the
	// coordination context is gone) and note what they owe.
	if !r.book.WaitFiring(cctx) {
		errs = append(errs, errors.New("fires in flight did not end in time"))
	}
	a.held.Release(cctx, r.rc.Session(), nil) // any a fire in flight made
	a.done.FlushAll(cctx)                     // records deferred under a session that ended
	// Runs still owed — to items that were busy when this instance left, or
	// noted by fires in flight — go to another instance.
	if handOver {
		if err := lv.HandOverRest(cctx, r.config().book); err != nil {
			errs = append(errs, err)
		}
	}
	if err := a.elect.Resign(cctx); err != nil {
		errs = append(errs, fmt.Errorf("resigning leadership: %w", err))
	}

	cancels := append(a.cache.Close(), a.fo.Close()...)
	cancels = append(cancels, r.watch.Close()...)
	r.bg.Close()
	cancels = append(cancels, r.book.CloseWaits()...)
	r.onRevoked()
	for _, c := range cancels {
		if c != nil {
			c()
		}
	}
	a.elect.Close()
	a.cancelExec(ErrSchedulerClosed)
	r.bg.Cancel(ErrSchedulerClosed) // its goroutines end with the contexts above; the group's own is cancelled too

	if r.bg.Wait(cctx) != nil {
		errs = append(errs, errors.New("background work did not end in time"))
	}
	// The leader's membership check runs until the background work ends,
	// and a departure it queued after the leave cleared the departed
	// server's assignment with the load table still crediting it: its
	// repair, bound to the job's life, did not run. Repair now, as the
	// leave would have, so that the table is true when the stop returns
	// (with no other instance of the job, nobody else would until the
	// namespace review). Nothing is read when no such clear came.
	if registered && !removed && a.reshard.BooksBehind() {
		if err := a.reshard.Repair(cctx); err != nil {
			r.log.Warn("repairing the load table's books after a departure cleared while stopping", "err", err)
		}
	}
	a.cancelRecord()
	why := "shutdown"
	if removed {
		why = "removed from the cluster"
	}
	r.s.emit(Event{Kind: EventStopped, Job: r.name, Detail: why})
	return errors.Join(errs...)
}

// stopGrace is how far past its context's deadline a stop may go to leave
// the registry clean: Shutdown(ctx) returns within ctx's deadline and
// this, whatever the registry does.
const stopGrace = 500 * time.Millisecond

// cleanupContext is the context of a stop's registry work: not cancelled
// with ctx, so that a spent ctx still leaves the registry clean, but
// ending after most or at ctx's deadline and stopGrace,
// whichever comes first.
func cleanupContext(ctx context.Context, most time.Duration) (context.Context, context.CancelFunc) {
	end := time.Now().Add(most)
	if d, ok := ctx.Deadline(); ok && d.Add(stopGrace).Before(end) {
		end = d.Add(stopGrace)
	}
	return context.WithDeadline(context.WithoutCancel(ctx), end)
}

// leaver leaves the job when it stops (job/internal/leaving).
func (r *runner) leaver(a *active) *leaving.Leaver {
	return &leaving.Leaver{RC: r.rc, Paths: r.paths, Job: r.name, Server: r.serverID(), Book: r.book, Flags: r.flags,
		Repair: a.reshard.Repair, BooksBehind: a.reshard.BooksBehind, Now: r.s.opts.now, Log: r.log}
}
