package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardjob/shardjob/listener"
	"github.com/shardjob/shardjob/regcenter"
)

// The execute stage: items reserved and marked run concurrently, each in
// its own goroutine, and their results go to completeAll (complete.go).

// execute runs items for the fire at, marking them running and completed.
func (r *runner) execute(sess *regcenter.Session, at time.Time, items []int, kind Kind) {
	cfg := r.config()
	r.run(sess, cfg, at, r.reserve(items, at, time.Time{}, kind, cfg), kind)
}

// run executes items reserved here: marks, runs and completes them.
func (r *runner) run(sess *regcenter.Session, cfg *spec, at time.Time, todo []int, kind Kind) {
	if len(todo) == 0 {
		return
	}
	var records map[int]record
	if !cfg.Unmonitored {
		ctx, cancel := r.coordCtx(sess)
		// A make-up run proves what this instance knows of its items'
		// records while it marks them, instead of reading them after.
		if kind == KindMisfire || kind == KindFailover {
			records = r.knownRecords(todo)
		}
		marked, err := r.markRunning(ctx, sess, at, kind, todo, nil, records)
		cancel()
		// On an error, marked holds the items still reserved here.
		if err != nil && kind == KindFailover {
			// The queue entries stay; give the claims back for a retry.
			r.log.Warn("cannot mark failover items running; handing them back", "items", marked, "err", err)
			hctx, hcancel := context.WithTimeout(sess.Ctx(), r.s.opts.reshardTimeout)
			r.handBack(hctx, sess, marked)
			hcancel()
			r.release(marked)
			return
		}
		if err != nil {
			r.log.Warn("cannot mark items running; they will run as a misfire", "items", marked, "err", err)
			for _, it := range marked {
				r.noteMisfire(it, at, cfg)
			}
			r.release(marked)
			return
		}
		todo = marked
	}
	r.launch(sess, cfg, at, todo, kind, records)
}

// launch runs items reserved (and, monitored, marked running) here, and
// completes them. proven are item records the marking proved current.
func (r *runner) launch(sess *regcenter.Session, cfg *spec, at time.Time, todo []int, kind Kind, proven map[int]record) {
	n := len(todo)
	if n == 0 {
		return
	}
	var results chan itemResult // made where results are collected (not for a lone item, below)
	var fires map[int]time.Time
	var priors map[int]record
	switch kind {
	case KindMisfire, KindFailover:
		results = make(chan itemResult, n)
		todo, fires, priors = r.owedRuns(sess, cfg, at, todo, kind, proven, results)
	case KindFire:
		priors = r.priorsFor(todo)
	}
	collect := func() chan itemResult {
		if results == nil {
			results = make(chan itemResult, n)
		}
		return results
	}
	fireOf := func(it int) time.Time {
		if f, ok := fires[it]; ok {
			return f
		}
		return at
	}
	if !r.untilFire(sess, r.latestThrough(at, todo)) {
		// Stopped before the fire's time: nothing started, and the items
		// are handed over as any run cut short by shutdown is.
		r.closeUnstarted(sess, cfg, todo, fireOf, kind, collect(), n)
		return
	}
	params, _ := cfg.ItemParameters()
	defer r.fireStarted(at, kind, todo)()
	if rj, ok := r.job.(RangeJob); ok {
		r.launchRanges(sess, cfg, rj, params, todo, fireOf, priors, kind, collect(), n)
		return
	}
	if n == 1 && len(todo) == 1 && !r.isClosed() {
		// A lone item (one to run, none settled) runs on this goroutine,
		// which would wait for it in any case, and is completed as it
		// returns: no goroutine and no channel for one result.
		it := todo[0]
		res := r.runItem(sess, cfg, params, fireOf(it), it, kind)
		res.prior = priors[it]
		r.complete(sess, cfg, []itemResult{res})
		return
	}
	results = collect()
	for _, it := range todo {
		fire := fireOf(it)
		prior := priors[it]
		if !r.goFunc(func() {
			res := r.runItem(sess, cfg, params, fire, it, kind)
			res.prior = prior
			results <- res
		}) {
			results <- closedResult(it, fire, kind)
		}
	}
	r.completeAll(sess, cfg, results, n)
}

// The rarer branches of launch, each a function of its own so that launch
// reads as the steady fire's path.

// owedRuns prepares a make-up run (kind KindMisfire or KindFailover) of
// todo for launch: the items still owed, the earliest fire each one owes
// and what their records said; results gets the items found settled.
func (r *runner) owedRuns(sess *regcenter.Session, cfg *spec, at time.Time, todo []int, kind Kind, proven map[int]record, results chan<- itemResult) ([]int, map[int]time.Time, map[int]record) {
	fires := r.absorbDebts(cfg, todo, at)
	if cfg.Unmonitored {
		return todo, fires, nil
	}
	todo, priors, settled := r.stillOwed(sess, cfg, at, fires, todo, kind, proven)
	for _, s := range settled {
		results <- s
	}
	return todo, fires, priors
}

// closeUnstarted completes todo, which shutdown stopped before its fire's
// time, as runs cut short by shutdown (handed over).
func (r *runner) closeUnstarted(sess *regcenter.Session, cfg *spec, todo []int, fireOf func(int) time.Time, kind Kind, results chan itemResult, n int) {
	for _, it := range todo {
		results <- closedResult(it, fireOf(it), kind)
	}
	r.completeAll(sess, cfg, results, n)
}

// launchRanges runs todo as runs of consecutive items for a RangeJob, each
// on its own goroutine, and completes them.
func (r *runner) launchRanges(sess *regcenter.Session, cfg *spec, rj RangeJob, params map[int]string, todo []int, fireOf func(int) time.Time, priors map[int]record, kind Kind, results chan itemResult, n int) {
	for _, run := range runsOf(todo, fireOf) {
		if !r.goFunc(func() {
			for _, res := range r.runRange(sess, cfg, params, rj, run, kind) {
				res.prior = priors[res.item]
				results <- res
			}
		}) {
			for it := run.first; it <= run.last; it++ {
				results <- closedResult(it, run.fire, kind)
			}
		}
	}
	r.completeAll(sess, cfg, results, n)
}

// closedResult is the result of an execution that never started because
// the runner is stopping: not completed, handed over as a run cut short.
func closedResult(item int, fire time.Time, kind Kind) itemResult {
	now := time.Now()
	return itemResult{item: item, fire: fire, kind: kind, begin: now, end: now, halted: ErrSchedulerClosed}
}

// latestThrough returns the latest fire the executions of items reserved
// here stand for, at the earliest at.
func (r *runner) latestThrough(at time.Time, items []int) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, it := range items {
		if e := r.runs.running[it]; e != nil && e.through.After(at) {
			at = e.through
		}
	}
	return at
}

type itemResult struct {
	item   int
	fire   time.Time
	kind   Kind
	begin  time.Time
	end    time.Time
	err    error
	halted error // non-nil when the execution was cut short: not completed
	// settled: nothing ran, earlier runs had made up for every fire owed;
	// the completion cleans up (mark, misfire node, queue entry) but
	// records no completion of its own.
	settled bool
	// through is the latest fire the execution stood for (see
	// ShardingContext.Through).
	through time.Time
	// prior is what the item's record said before this run (see record):
	// the completion records it with this run added.
	prior record
}

// runContext returns the parent of the runs under sess here: cancelled
// when sess ends, or with r.ctx.exec's cause when shutdown's grace period
// ends. There is one per session, made by its first run: a run of its own
// would link to r.ctx.exec and unlink again every time.
func (r *runner) runContext(sess *regcenter.Session) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ctx.runs.of(sess, r.ctx.exec)
}

func (r *runner) runItem(sess *regcenter.Session, cfg *spec, params map[int]string, at time.Time, item int, kind Kind) itemResult {
	ctx := newRunCtx(r.runContext(sess))
	defer ctx.end()
	through := at
	r.mu.Lock()
	if e := r.runs.running[item]; e != nil {
		e.kind, e.fire = kind, at
		if e.through.After(at) {
			through = e.through
		}
	}
	r.mu.Unlock()

	sc := ShardingContext{
		JobName: r.name, TaskID: taskID(r.name, at), FireTime: at, Through: through,
		ShardingTotalCount: cfg.ShardingTotalCount, Item: item, ItemParameter: params[item],
		JobParameter: cfg.JobParameter, Kind: kind, ServerID: r.serverID(),
		owner: ctx.owner(sess),
	}
	res := itemResult{item: item, fire: at, through: through, kind: kind, begin: time.Now()}
	ev := r.listenerEvent(sc, res.begin)
	for _, l := range r.s.opts.listeners {
		l.BeforeExecution(ev)
	}
	res.err = r.callTimed(ctx, sc, cfg.Timeout)
	res.end = time.Now()
	if ctx.Err() != nil {
		res.halted = context.Cause(ctx)
	}
	ev.End, ev.Err = res.end, res.err
	for _, l := range r.s.opts.listeners {
		l.AfterExecution(ev)
	}
	if res.err != nil && res.halted == nil {
		r.log.Warn("item failed", "item", item, "fire", at, "kind", kind, "err", res.err)
	}
	return res
}

// callTimed calls the job with ctx bounded by timeout (0: unbounded). An
// execution that outlives its deadline fails with ErrExecutionTimeout,
// whatever it returned: it is a failure of this fire, not a fire cut short
// (only a cancellation of ctx itself is that).
func (r *runner) callTimed(ctx context.Context, sc ShardingContext, timeout time.Duration) error {
	return timed(ctx, sc.owner, timeout, func(ctx context.Context, owner *ownership) error {
		sc.owner = owner
		return r.call(ctx, sc)
	})
}

// timed runs fn under ctx bounded by timeout (0: unbounded), with the
// ownership check bounded the same way; see callTimed.
func timed(ctx context.Context, owner *ownership, timeout time.Duration, fn func(context.Context, *ownership) error) error {
	if timeout <= 0 {
		return fn(ctx, owner)
	}
	tctx, cancel := context.WithTimeoutCause(ctx, timeout, ErrExecutionTimeout)
	defer cancel()
	err := fn(tctx, &ownership{sess: owner.sess, ctx: tctx})
	if ctx.Err() == nil && errors.Is(context.Cause(tctx), ErrExecutionTimeout) {
		if err == nil {
			return fmt.Errorf("%w after %v", ErrExecutionTimeout, timeout)
		}
		return fmt.Errorf("%w after %v: %w", ErrExecutionTimeout, timeout, err)
	}
	return err
}

// call runs the job, turning a panic into an error.
func (r *runner) call(ctx context.Context, sc ShardingContext) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("job %q item %d panicked: %v", sc.JobName, sc.Item, p)
		}
	}()
	return r.job.Execute(ctx, sc)
}

func (r *runner) listenerEvent(sc ShardingContext, begin time.Time) listener.Execution {
	return listener.Execution{Job: sc.JobName, TaskID: sc.TaskID, ServerID: sc.ServerID, Item: sc.Item, Kind: string(sc.Kind), FireTime: sc.FireTime, Begin: begin}
}
