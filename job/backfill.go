package job

import (
	"slices"
	"sync"
	"time"

	"github.com/shardjob/shardjob/internal/backfill"
	"github.com/shardjob/shardjob/job/internal/backfilling"
	"github.com/shardjob/shardjob/job/internal/book"
	"github.com/shardjob/shardjob/regcenter"
)

// Backfills (internal/backfill): an operator's request to run the job's
// fires over a past range. The request reaches an instance through its
// server's backfill flag (flags.go); its driver, runBackfill, runs the
// fires of the items this instance owns, in order and at the request's
// rate, each as a KindBackfill fire through the fire path — reserved in
// the book, marked running, run, completed — so that a backfill run never
// runs beside another run of its item, here or elsewhere. The completion
// writes the item's progress in its own transaction (a crash re-runs at
// most the fire in flight); a busy item's fire is tried again, not owed.
// The registry work (the request, the progress, the other servers told)
// and the hand-off of released items to waiting fires are
// job/internal/backfilling's; the driver and the fire path stay here.

// backfillIdle is how long a driver whose own items are through waits
// before it looks again: a reshard may give it items whose owner left
// mid-backfill.
const backfillIdle = 2 * time.Second

// runBackfill is the backfill driver (the backfill kicker's pass). It runs
// until the request is through on every item, cancelled or gone (or does
// not decode), or the job stops here; a lost session only pauses it.
func (r *runner) runBackfill() {
	// A job far from its next fire has not joined its election, nor been
	// placed: a backfill needs both, as a trigger does.
	if err := r.prepareSync(); err != nil {
		r.log.Warn("backfill: preparing to run", "err", err)
	}
	a := r.active()
	var (
		id        string
		last      time.Time // when the previous pass started, for the rate
		lastFires int       // the fires it ran
		mine      []int     // this instance's items at the previous pass
	)
	for !r.isClosed() {
		// Across sessions: a lost one ends the pass, the next registers
		// the job again and the backfill goes on (no one else would tell
		// this instance again).
		sess, ok := r.readyToFire()
		if !ok {
			if !a.firer.SleepUntil(r.s.opts.now().Add(backfillIdle), nil) {
				return
			}
			continue
		}
		ctx, cancel := r.coordCtx(sess)
		req, ok, err := a.bfReg.ReadRequest(ctx)
		cancel()
		if err != nil {
			// A registry that cannot answer now: read again.
			if !a.firer.SleepUntil(r.s.opts.now().Add(backfillIdle), nil) {
				return
			}
			continue
		}
		if !ok || req.State != backfill.Running {
			return
		}
		if req.ID != id {
			r.backfills.Forget()
			id = req.ID
			r.log.Info("backfill: running this instance's items", "backfill", id, "from", req.FromTime(), "to", req.ToTime(), "rate", req.Rate)
		}
		cfg := r.config()
		sched, _, err := cfg.Schedule()
		if cfg.Unmonitored || err != nil {
			r.log.Warn("backfill: the job cannot run one (unmonitored, or no schedule)", "backfill", id, "err", err)
			return
		}
		groups, assigned, err := r.nextBackfill(sess, req, sched)
		if err == nil && mine != nil && !slices.Equal(mine, assigned) {
			// A reshard: an instance that joined since the request was
			// made was not told of it, and the items gained back may
			// have gone on elsewhere meanwhile.
			ctx, cancel := r.coordCtx(sess)
			a.bfReg.TellServers(ctx)
			cancel()
			r.backfills.Forget()
		}
		if err == nil {
			mine = assigned
		}
		switch {
		case err != nil:
			r.log.Warn("backfill: reading this instance's items", "backfill", id, "err", err)
		case len(groups) == 0:
			ctx, cancel := r.coordCtx(sess)
			through := a.bfReg.Through(ctx, req, sched, cfg.ShardingTotalCount, r.flags.DisabledItems())
			cancel()
			if through {
				r.log.Info("backfill: every item is through", "backfill", id)
				return
			}
		}
		if len(groups) == 0 || r.flags.Paused() {
			if !a.firer.SleepUntil(r.s.opts.now().Add(backfillIdle), sess.Ctx().Done()) {
				return
			}
			continue
		}
		if !last.IsZero() && !a.firer.SleepUntil(last.Add(time.Duration(float64(lastFires)*float64(time.Second)/req.Rate)), sess.Ctx().Done()) {
			return
		}
		last, lastFires = r.s.opts.now(), len(groups)
		r.runBackfillFires(sess, id, groups)
	}
}

// runBackfillFires runs a pass of a backfill: each item's next fire, the
// items of one fire together, the fires side by side; it returns once
// all are completed.
func (r *runner) runBackfillFires(sess *regcenter.Session, id string, groups map[time.Time][]int) {
	var wg sync.WaitGroup
	for at, items := range groups {
		f := &fire{Sess: sess, At: at, Kind: book.Backfill, Items: items, Backfill: id}
		wg.Add(1)
		if !r.goFunc(func() { defer wg.Done(); r.reserveBackfill(f) }) {
			wg.Done() // stopping: the driver ends at its next pass
		}
	}
	wg.Wait()
}

// newBackfilling returns the runner's registry work of backfills.
func (r *runner) newBackfilling() *backfilling.Registry {
	return &backfilling.Registry{RC: r.rc, Paths: r.paths, ServerID: r.serverID(), Known: &r.backfills, Log: r.log, Report: r.reportBadValue}
}

// nextBackfill returns, by fire, the items of this instance (not
// disabled) whose next fire of req it is, and this instance's items
// (backfilling.Registry.Next).
func (r *runner) nextBackfill(sess *regcenter.Session, req backfill.Request, sched backfill.Schedule) (map[time.Time][]int, []int, error) {
	act := r.active()
	a, err := act.assigned.Get(sess)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := r.coordCtx(sess)
	defer cancel()
	return act.bfReg.Next(ctx, req, sched, a.Items, r.flags.DisabledItems(), r.config().ShardingTotalCount)
}

// reserveBackfill reserves f's items in the book, waiting up to
// backfilling.Tries for those its live runs hold here (firing.Firer.Release), and
// runs those it reserved: the others wait for the next pass.
func (r *runner) reserveBackfill(f *fire) {
	f.Job = r.config().fireJob()
	a := r.active()
	f.Items = a.bfWait.Reserve(r.ctx.life, f.Sess, f.Items, func(items []int) []int {
		return r.book.Reserve(f.Job.Book, items, f.At, time.Time{}, f.Kind, r.flags.DisabledItems())
	})
	a.firer.MarkAndRun(f)
}
