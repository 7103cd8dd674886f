package job

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/shardjob/shardjob/job/internal/completion"
	"github.com/shardjob/shardjob/job/internal/execute"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/marks"
	"github.com/shardjob/shardjob/job/internal/retry"
	"github.com/shardjob/shardjob/job/internal/tracing"
	"github.com/shardjob/shardjob/listener"
	"github.com/shardjob/shardjob/regcenter"
)

// The execute stage: items reserved and marked run concurrently, each in
// its own goroutine, and their results go to the Completer (job/internal/completion).

// fire is one fire's run on this instance as it passes from stage to
// stage (reserve → mark → start → complete): the session it runs under,
// the job's config, the fire's time and kind, and the items it runs, with
// what the stages learn of them on the way.
type fire struct {
	sess  *regcenter.Session
	cfg   *spec
	at    time.Time
	kind  Kind
	items []int
	// fires holds the items whose run starts at another fire than at: a
	// make-up run since an earlier debt (see Book.AbsorbDebts, stillOwed).
	fires map[int]time.Time
	// priors are what the items' records said before (see record): their
	// completions add to them.
	priors map[int]record
	// onePrior is the prior of a scheduled fire's one item, when it has
	// one (hasOne): a map of one entry per fire costs more than the rest
	// of the lookup.
	onePrior record
	hasOne   bool
	params   map[int]string // the items' parameters
	// keys holds the items' keys in the list in force at their fires,
	// for a job whose items come from data (ItemLister); nil otherwise.
	keys map[int]string
	// known holds records of a scheduled fire's items newly held here, read
	// for this fire: the marking checks them (see ranBefore).
	known map[int]record
	// unrecorded are the items newly held here that had no record when
	// this fire read them, and those whose mark another run held when
	// this fire marked them (recheck): read again once marked
	// (recheckUnrecorded).
	unrecorded []int
	// mayHaveRun holds, for a failover run's items, the latest fire their
	// previous owner may have started (see ShardingContext.MayHaveRunThrough,
	// fireplan.MayHaveRunThrough); shared by the run's fires, read only.
	mayHaveRun map[int]time.Time
	// failedAttempts holds, for a failover run's items, the attempts of
	// their queue entry's fire that failed on the previous owner
	// (failover.Entry.Attempts): the run continues the count.
	failedAttempts map[int]failedAttempts
	// parentErr is why the parents' fires did not all succeed, for a job
	// that runs after them anyway (see awaitParents).
	parentErr error
	trace     *tracing.Fire // the fire's span (job/internal/tracing); nil: tracing is off
	// backfill is the backfill request a KindBackfill fire runs in, and
	// backfillVersions the versions of its items' progress nodes read
	// under their marks (recheckBackfill).
	backfill         string
	backfillVersions map[int]int32
}

// recheck adds item to the items whose record a scheduled fire reads
// again once it has marked them (recheckUnrecorded): the fire found the
// item's mark held by another run — of another instance, or of a session
// that has ended — and marked it only once that mark was gone. That run
// may have stood for this very fire (a make-up run through it, of an
// instance that owed the item's earlier fires), and completed it after
// this fire read what it knows of the record: run again as a plain fire,
// a completed fire would run twice. Other kinds read their records once
// marked anyway.
func (f *fire) recheck(item int) {
	if f.kind == KindFire && !slices.Contains(f.unrecorded, item) {
		f.unrecorded = append(f.unrecorded, item)
	}
}

// fireOf is the fire item's run starts at (fireplan.FireOf).
func (f *fire) fireOf(item int) time.Time { return fireplan.FireOf(f.fires, f.at, item) }

// prior is what item's record said before this run (see priors).
func (f *fire) prior(item int) record {
	if f.hasOne && len(f.items) == 1 && f.items[0] == item {
		return f.onePrior
	}
	return f.priors[item]
}

// reserveAndRun reserves f's items here (the ones free), then marks and
// runs them: the path of a fire whose items nothing reserved before it (a
// trigger).
func (r *runner) reserveAndRun(f *fire) {
	f.cfg = r.config()
	f.items = r.book.Reserve(f.cfg.book, f.items, f.at, time.Time{}, bookKind(f.kind), r.flags.DisabledItems())
	r.markAndRun(f)
}

// markAndRun marks f's items, reserved here, running (a monitored job),
// then runs and completes them.
func (r *runner) markAndRun(f *fire) {
	if len(f.items) == 0 {
		return
	}
	var records map[int]record
	if !f.cfg.Unmonitored && !r.allHeld(f) {
		ctx, cancel := r.coordCtx(f.sess)
		// A make-up run proves what this instance knows of its items'
		// records while it marks them, instead of reading them after.
		if f.kind == KindMisfire || f.kind == KindFailover {
			records = r.records.Provable(f.items)
		} else if f.kind == KindFire {
			records = f.known
		}
		// The run's answers for the items it cannot mark, and for those
		// it gives back if the marking fails.
		var out marks.Outcomes = markOutcomes{r: r, f: f}
		marked, err := r.markRunning(ctx, f, nil, records, out)
		cancel()
		if err != nil {
			// marked holds the items still reserved here: a failover
			// run's queue entries stay, and its claims go back for a
			// retry; any other run's items are owed a misfire.
			if f.kind == KindFailover {
				r.log.Warn("cannot mark failover items running; handing them back", "items", marked, "err", err)
			} else {
				r.log.Warn("cannot mark items running; they will run as a misfire", "items", marked, "err", err)
			}
			hctx, hcancel := context.WithTimeout(f.sess.Ctx(), r.s.opts.reshardTimeout)
			out.Unmarked(hctx, marked)
			hcancel()
			return
		}
		f.items = marked
	}
	r.startRuns(f, records)
}

// allHeld reports whether f, a scheduled fire with no record to prove,
// finds every item's mark held here under a live session: marking would
// send nothing (hold.go), so it is not called, nor its context made.
func (r *runner) allHeld(f *fire) bool {
	return f.kind == KindFire && len(f.known) == 0 && f.sess.Check() == nil && r.holds.HoldsAll(f.sess, f.items)
}

// startRuns starts the runs of f's items, reserved (and, monitored, marked
// running) here, and completes them. proven are item records the marking
// proved current.
func (r *runner) startRuns(f *fire, proven map[int]record) {
	n := len(f.items)
	if n == 0 {
		return
	}
	var results chan itemResult // made where results are collected (not for a lone item, below)
	switch f.kind {
	case KindMisfire, KindFailover:
		results = make(chan itemResult, n)
		r.narrowOwed(f, proven, results)
	case KindBackfill:
		results = make(chan itemResult, n)
		r.recheckBackfill(f, results)
	case KindFire:
		if len(f.unrecorded) > 0 {
			if f.items = r.recheckUnrecorded(f); len(f.items) == 0 {
				return
			}
			n = len(f.items)
		}
		if n == 1 {
			f.onePrior, _ = r.records.Lookup(f.items[0])
			f.hasOne = true
		} else {
			f.priors = r.records.Known(f.items)
		}
	}
	// No execution starts before the fire it stands for: a run claimed
	// ahead of its time waits for it here. A lost session ends the wait
	// too, and the run finds its context cancelled.
	if !r.sleepUntil(r.book.LatestThrough(f.at, f.items...), f.sess.Ctx().Done()) {
		// Stopped before the fire's time: nothing started, and the items
		// are handed over as any run cut short by shutdown is.
		r.closeUnstarted(f, resultsFor(results, n), n)
		return
	}
	if f.cfg.After != "" && f.kind != KindTrigger && f.kind != KindBackfill {
		if err := r.awaitParents(f); err != nil {
			if r.isClosed() || f.sess.Check() != nil {
				r.closeUnstarted(f, resultsFor(results, n), n)
				return
			}
			if f.cfg.OnParentFailure != ParentRun {
				r.skipForParents(f, resultsFor(results, n), n, err)
				return
			}
			f.parentErr = err
		}
	}
	f.params, _ = f.cfg.ItemParameters()
	if _, keyed := r.job.(ItemLister); keyed {
		if err := r.readItemKeys(f); err != nil {
			r.failItems(f, resultsFor(results, n), n, err)
			return
		}
	}
	defer r.traceFire(f)()
	defer r.fireStarted(f.at, f.kind, f.items)()
	if rj, ok := r.job.(RangeJob); ok {
		r.startRangeRuns(f, rj, resultsFor(results, n), n)
		return
	}
	if n == 1 && len(f.items) == 1 && !r.isClosed() {
		// A lone item (one to run, none settled) runs on this goroutine,
		// which would wait for it in any case, and is completed as it
		// returns: no goroutine and no channel for one result.
		it := f.items[0]
		res := r.executeItem(f, it)
		res.Prior = f.prior(it)
		r.done.Complete(f.sess, f.cfg.done, []itemResult{res})
		return
	}
	results = resultsFor(results, n)
	for _, it := range f.items {
		prior := f.prior(it)
		if !r.goFunc(func() {
			res := r.executeItem(f, it)
			res.Prior = prior
			results <- res
		}) {
			results <- closedResult(it, f.fireOf(it), f.kind)
		}
	}
	r.done.All(f.sess, f.cfg.done, results, n)
}

// resultsFor returns results, made with room for n results if it is nil.
func resultsFor(results chan itemResult, n int) chan itemResult {
	if results == nil {
		return make(chan itemResult, n)
	}
	return results
}

// The rarer branches of startRuns, each a function of its own so that
// startRuns reads as the steady fire's path.

// narrowOwed narrows a make-up run (kind KindMisfire or KindFailover) for
// startRuns: f keeps the items still owed, the earliest fire each one owes
// and what their records said; results gets the items found settled.
func (r *runner) narrowOwed(f *fire, proven map[int]record, results chan<- itemResult) {
	f.fires = r.book.AbsorbDebts(f.cfg.book, f.items, f.at)
	defer r.dropExpired(f, results)
	if f.cfg.Unmonitored {
		return
	}
	for _, s := range r.stillOwed(f, proven) {
		results <- s
	}
}

// closeUnstarted completes f's items, which shutdown stopped before their
// fire's time, as runs cut short by shutdown (handed over).
func (r *runner) closeUnstarted(f *fire, results chan itemResult, n int) {
	for _, it := range f.items {
		results <- closedResult(it, f.fireOf(it), f.kind)
	}
	r.done.All(f.sess, f.cfg.done, results, n)
}

// startRangeRuns runs f's items as runs of consecutive items for a
// RangeJob, each on its own goroutine, and completes them.
func (r *runner) startRangeRuns(f *fire, rj RangeJob, results chan itemResult, n int) {
	for _, run := range fireplan.Runs(f.items, f.fireOf) {
		if !r.goFunc(func() {
			for _, res := range r.executeRange(f, rj, run) {
				res.Prior = f.prior(res.Item)
				results <- res
			}
		}) {
			for it := run.First; it <= run.Last; it++ {
				results <- closedResult(it, run.Fire, f.kind)
			}
		}
	}
	r.done.All(f.sess, f.cfg.done, results, n)
}

// closedResult is the result of an execution that never started because
// the runner is stopping: not completed, handed over as a run cut short.
func closedResult(item int, fire time.Time, kind Kind) itemResult {
	now := time.Now()
	return itemResult{Item: item, Fire: fire, Kind: bookKind(kind), Begin: now, End: now, Halted: ErrSchedulerClosed}
}

// itemResult is what a run hands forward to its completion
// (job/internal/completion).
type itemResult = completion.Result

// runContext returns the parent of the runs under sess here: cancelled
// when sess ends, or with r.ctx.exec's cause when shutdown's grace period
// ends. There is one per session, made by its first run: a run of its own
// would link to r.ctx.exec and unlink again every time.
func (r *runner) runContext(sess *regcenter.Session) context.Context {
	return r.ctx.runs.Of(sess, r.ctx.exec)
}

// executeItem calls the job for one item of f and returns its result:
// the last attempt's, when the job retries failed runs (Config.Retry;
// the attempts are job/internal/execute's).
func (r *runner) executeItem(f *fire, item int) itemResult {
	sess, cfg, params, at, kind := f.sess, f.cfg, f.params, f.fireOf(item), f.kind
	ctx := newRunCtx(r.runContext(sess))
	defer ctx.End()
	through := r.book.Started(item, item, at, ctx.replace)

	sc := ShardingContext{
		JobName: r.name, TaskID: taskID(r.name, at), FireTime: at, Through: through,
		ShardingTotalCount: cfg.ShardingTotalCount, Item: item, ItemParameter: params[item], ItemKey: f.keys[item],
		JobParameter: cfg.JobParameter, Kind: kind, ServerID: r.serverID(),
		ParentErr: f.parentErr, MayHaveRunThrough: fireplan.MayHaveRunThrough(f.mayHaveRun, item, at, through), owner: ctx.owner(sess),
	}
	failed := f.failedBefore(item, at)
	// A count continued from another owner: its retry node goes with
	// this run's completion.
	res := itemResult{Item: item, Fire: at, Through: through, Kind: bookKind(kind), Begin: time.Now(), RetryNoted: failed > 0,
		Backfill: f.backfill, BackfillVersion: -1}
	if v, ok := f.backfillVersions[item]; ok {
		res.BackfillVersion = v
	}
	if f.keys != nil && sc.ItemKey == "" {
		// An item without a key in the list in force: nothing to run.
		res.End = res.Begin
		return res
	}
	r.s.exec.Run(ctx, r.runOf(f, sc, item, item, cfg.retry), 1+failed, &res, func(tctx context.Context, attempt int) error {
		sc.Attempt = attempt
		return r.callTimed(tctx, sc, cfg.Timeout)
	})
	if res.Halted != nil && res.FailedAttempts > 0 {
		// Cut short after failures (a lost session ended a retry's
		// wait): this instance's own make-up of the fire continues the
		// count, as another owner would from the retry node.
		r.inherit.NoteFailed(item, at, res.FailedAttempts)
	}
	return res
}

// runOf is the facts of the run of f's items first to last, whose
// context is sc, as the execute stage takes them (execute.Job.Of).
func (r *runner) runOf(f *fire, sc ShardingContext, first, last int, pol retry.Policy) execute.Run {
	var sched fireplan.Schedule
	if pol.Attempts > 0 {
		if s, _, err := f.cfg.Schedule(); err == nil {
			sched = s
		}
	}
	ev := listener.Execution{Job: sc.JobName, TaskID: sc.TaskID, ServerID: sc.ServerID, Item: sc.Item, Kind: string(sc.Kind), FireTime: sc.FireTime}
	return r.run.Of(ev, f.trace, first, last, sc.Through, pol, sched, f.kind == KindBackfill, !f.cfg.Unmonitored)
}

// callTimed calls the job with ctx bounded by timeout (0: unbounded), and
// its ownership check bounded the same way: an execution that outlives
// its deadline fails with ErrExecutionTimeout (execute.Bounded).
func (r *runner) callTimed(ctx context.Context, sc ShardingContext, timeout time.Duration) error {
	return execute.Bounded(ctx, timeout, ErrExecutionTimeout, func(ctx context.Context, bounded bool) error {
		if bounded {
			sc.owner = &ownership{sess: sc.owner.sess, ctx: ctx}
		}
		return r.call(ctx, sc)
	})
}

// call runs the job, turning a panic into an error.
func (r *runner) call(ctx context.Context, sc ShardingContext) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("job %q item %d panicked: %v", sc.JobName, sc.Item, p)
		}
	}()
	r.counters.executing.Add(1)
	defer r.counters.executing.Add(-1)
	return r.job.Execute(ctx, sc)
}
