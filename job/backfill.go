package job

import (
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/shardjob/shardjob/internal/backfill"
	"github.com/shardjob/shardjob/internal/parallel"
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
			if !r.sleepUntil(r.s.opts.now().Add(backfillIdle), nil) {
				return
			}
			continue
		}
		req, ok, err := r.readBackfill(sess)
		if err != nil {
			// A registry that cannot answer now: read again.
			if !r.sleepUntil(r.s.opts.now().Add(backfillIdle), nil) {
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
			r.tellServers(sess)
			r.backfills.Forget()
		}
		if err == nil {
			mine = assigned
		}
		switch {
		case err != nil:
			r.log.Warn("backfill: reading this instance's items", "backfill", id, "err", err)
		case len(groups) == 0:
			if r.backfillThrough(sess, req, sched, cfg.ShardingTotalCount) {
				r.log.Info("backfill: every item is through", "backfill", id)
				return
			}
		}
		if len(groups) == 0 || r.flags.Paused() {
			if !r.sleepUntil(r.s.opts.now().Add(backfillIdle), sess.Ctx().Done()) {
				return
			}
			continue
		}
		if !last.IsZero() && !r.sleepUntil(last.Add(time.Duration(float64(lastFires)*float64(time.Second)/req.Rate)), sess.Ctx().Done()) {
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
		f := &fire{sess: sess, at: at, kind: KindBackfill, items: items, backfill: id}
		wg.Add(1)
		if !r.goFunc(func() { defer wg.Done(); r.reserveBackfill(f) }) {
			wg.Done() // stopping: the driver ends at its next pass
		}
	}
	wg.Wait()
}

// backfillTries is how long a backfill fire waits, within a pass, for
// items its live runs hold here: the release of such an item hands it to
// the waiting backfill fire before the schedule's own make-up run (see
// handBackfill), so that a backfill goes on beside a job whose runs fill
// its period. Items held elsewhere are tried again at the next pass.
const backfillTries = time.Second

// backfillWaiter is a backfill fire waiting for items held here.
type backfillWaiter struct {
	f    *fire
	want map[int]bool
	got  chan []int // the items reserved for it; buffered, sent once
}

// backfillWaiters are the backfill fires waiting for items (runner's
// waiters: reserveBackfill adds and removes, handBackfill serves).
type backfillWaiters struct {
	mu sync.Mutex
	ws map[*backfillWaiter]bool
}

// reserveBackfill reserves f's items in the book, waiting up to
// backfillTries for those its live runs hold here, and runs those it
// reserved: the others wait for the next pass.
func (r *runner) reserveBackfill(f *fire) {
	f.cfg = r.config()
	// Waiting before the first try: a release between the try and the
	// wait hands its items to this fire.
	w := &backfillWaiter{f: f, want: make(map[int]bool, len(f.items)), got: make(chan []int, 1)}
	for _, it := range f.items {
		w.want[it] = true
	}
	r.bfWait.mu.Lock()
	if r.bfWait.ws == nil {
		r.bfWait.ws = map[*backfillWaiter]bool{}
	}
	r.bfWait.ws[w] = true
	r.bfWait.mu.Unlock()
	f.items = r.book.Reserve(f.cfg.book, f.items, f.at, time.Time{}, bookKind(f.kind), r.flags.DisabledItems())
	if len(f.items) == 0 && f.sess.Err() == nil {
		t := time.NewTimer(backfillTries) // real time: the wait is the runs', whatever the clock
		select {
		case f.items = <-w.got:
		case <-t.C:
		case <-f.sess.Ctx().Done():
		case <-r.ctx.life.Done():
		}
		t.Stop()
	}
	r.bfWait.mu.Lock()
	delete(r.bfWait.ws, w)
	r.bfWait.mu.Unlock()
	// Items handed over before the waiter went are reserved for this
	// fire: they run with it.
	select {
	case got := <-w.got:
		f.items = append(f.items, got...)
		slices.Sort(f.items)
	default:
	}
	r.markAndRun(f)
}

// handBackfill hands items just released here to the backfill fires
// waiting for them, reserved in the book for each, before anything else
// may take them (release).
func (r *runner) handBackfill(items []int) {
	r.bfWait.mu.Lock()
	defer r.bfWait.mu.Unlock()
	for w := range r.bfWait.ws {
		var mine []int
		for _, it := range items {
			if w.want[it] {
				mine = append(mine, it)
			}
		}
		if len(mine) == 0 {
			continue
		}
		got := r.book.Reserve(w.f.cfg.book, mine, w.f.at, time.Time{}, bookKind(w.f.kind), r.flags.DisabledItems())
		if len(got) > 0 {
			delete(r.bfWait.ws, w)
			w.got <- got
		}
	}
}

// readBackfill reads the job's backfill request; false when there is none
// (or it does not decode: reported, and read as none), an error when it
// could not be read.
func (r *runner) readBackfill(sess *regcenter.Session) (backfill.Request, bool, error) {
	ctx, cancel := r.coordCtx(sess)
	defer cancel()
	req, ok, _, err := backfill.ReadRequest(ctx, r.rc, r.paths, func(p string, st regcenter.Stat, data []byte, err error) {
		r.reportBadValue(p, st, data, "garbage in the backfill request; no backfill runs", "err", err)
	})
	if err != nil {
		r.log.Warn("backfill: reading the request", "err", err)
	}
	return req, ok, err
}

// nextBackfill returns, by fire, the items of this instance (not
// disabled) whose next fire of req it is (none: every item here is
// through), and this instance's items. Progress it does not know yet is
// read, and an item's progress node made where missing, for its
// completion to set.
func (r *runner) nextBackfill(sess *regcenter.Session, req backfill.Request, sched backfill.Schedule) (map[time.Time][]int, []int, error) {
	a, err := r.assignment(sess)
	if err != nil {
		return nil, nil, err
	}
	disabled := r.flags.DisabledItems()
	total := r.config().ShardingTotalCount
	var mine, unknown []int
	for _, it := range a.Items {
		if it < 0 || it >= total || disabled[it] {
			continue
		}
		mine = append(mine, it)
		if _, ok := r.backfills.Of(it, req.ID); !ok {
			unknown = append(unknown, it)
		}
	}
	if len(unknown) > 0 {
		ctx, cancel := r.coordCtx(sess)
		defer cancel()
		errs := make([]error, len(unknown))
		parallel.Each(len(unknown), 32, func(i int) {
			var p backfill.Progress
			if p, errs[i] = backfill.StartProgress(ctx, r.rc, r.paths, req, unknown[i], r.badProgress(unknown[i])); errs[i] == nil {
				r.backfills.Read(unknown[i], p)
			}
		})
		if err := errors.Join(errs...); err != nil {
			return nil, nil, err
		}
	}
	var groups map[time.Time][]int
	for _, it := range mine {
		p, _ := r.backfills.Of(it, req.ID)
		if next, ok := backfill.Next(sched, req, p); ok {
			if groups == nil {
				groups = map[time.Time][]int{}
			}
			groups[next] = append(groups[next], it)
		}
	}
	return groups, mine, nil
}

// tellServers sets the backfill flag of the job's other servers (one
// transaction): an instance that joined after the request was made holds
// items of it now. A server gone meanwhile keeps its flag for its return.
func (r *runner) tellServers(sess *regcenter.Session) {
	ctx, cancel := r.coordCtx(sess)
	defer cancel()
	if _, err := backfill.TellServers(ctx, r.rc, r.paths, r.serverID()); err != nil {
		r.log.Warn("backfill: telling the other servers", "err", err)
	}
}

// badProgress reports an item's progress node that does not decode.
func (r *runner) badProgress(item int) backfill.BadValue {
	return func(p string, st regcenter.Stat, data []byte, err error) {
		r.reportBadValue(p, st, data, "garbage in a backfill progress node; the item starts the range again", "item", item, "err", err)
	}
}

// backfillThrough reports whether every item of the job (but disabled
// ones) has run req through: read from the items' progress nodes.
func (r *runner) backfillThrough(sess *regcenter.Session, req backfill.Request, sched backfill.Schedule, total int) bool {
	ctx, cancel := r.coordCtx(sess)
	defer cancel()
	disabled := r.flags.DisabledItems()
	var items []int
	for it := range total {
		if !disabled[it] {
			items = append(items, it)
		}
	}
	for _, rd := range backfill.ReadProgress(ctx, r.rc, r.paths, items) {
		if _, more := backfill.Next(sched, req, rd.Progress); rd.Err != nil || !rd.Decoded || more {
			return false
		}
	}
	return true
}

// recheckBackfill reads, once f's items are marked here, their progress
// in f's backfill: an item that ran f's fire elsewhere meanwhile (its
// previous owner, before it released the mark this fire waited for) is
// settled unrun, its mark deleted by the completion. Read under the mark,
// the progress is the last word: a completion writes it before the mark
// goes. An item whose progress cannot be read runs.
func (r *runner) recheckBackfill(f *fire, results chan<- itemResult) {
	ctx, cancel := r.coordCtx(f.sess)
	defer cancel()
	reads := backfill.ReadProgress(ctx, r.rc, r.paths, f.items)
	ran := make([]bool, len(f.items))
	for i, rd := range reads {
		if rd.In(f.backfill) {
			r.backfills.Read(f.items[i], rd.Progress)
			ran[i] = rd.Progress.Through >= f.at.UnixMilli()
		}
	}
	// The completion writes the progress over the version read here,
	// under the mark: a write of an earlier fire's, applied late (its
	// answer lost), cannot put the progress back.
	f.backfillVersions = make(map[int]int32, len(f.items))
	for i, it := range f.items {
		f.backfillVersions[it] = reads[i].Version
	}
	keep := f.items[:0:0]
	now := time.Now()
	for i, it := range f.items {
		if !ran[i] {
			keep = append(keep, it)
			continue
		}
		results <- itemResult{Item: it, Fire: f.at, Kind: bookKind(f.kind), Begin: now, End: now, Settled: true, Backfill: f.backfill}
	}
	f.items = keep
}
