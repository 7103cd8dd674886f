package dispatch

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/shardjob/shardjob/internal/startstop"
	"github.com/shardjob/shardjob/regcenter"
)

// Start registers this node's lease and starts running tasks: a fetcher
// that claims startable tasks in batches, and a sweeper that renews the
// lease, times out overdue attempts and frees the tasks of lapsed leases.
// It returns once the lease is registered; the work goes on until Close.
func (d *Dispatcher) Start(ctx context.Context) error {
	if d.cfg.OnStart == nil {
		return fmt.Errorf("%w: Start needs Config.OnStart", ErrInvalid)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	if d.started {
		return ErrStarted
	}
	now := d.clock.Now()
	node, err := d.registerLease(ctx, now)
	if err != nil {
		return err
	}
	d.node, d.renewedAt, d.started = node, now, true
	d.loops, d.handlers = startstop.New(d.life), startstop.New(d.life)
	loops := []func(context.Context){d.fetchLoop, d.sweepLoop, d.retainLoop}
	if d.listenConn != nil {
		loops = append(loops, d.listenLoop)
	}
	if d.cfg.Regcenter != nil {
		loops = append(loops, d.zkLoop)
	}
	for _, loop := range loops {
		if err := d.loops.Go(loop); err != nil { // a new group refuses nothing; Close stops what started
			return err
		}
	}
	d.log.Info("dispatch: node started", "lease", node)
	return nil
}

// goHandler runs f as a tracked handler-side goroutine (a start listener,
// a notice), which Close waits for. The group stays open while Close
// waits: a handler may start a notice.
func (d *Dispatcher) goHandler(f func()) {
	if err := d.handlers.Go(func(context.Context) { f() }); err != nil {
		d.log.Warn("dispatch: handler not run: the dispatcher has closed", "err", err)
	}
}

// Close stops claiming, waits for the running handlers until ctx ends (then
// cancels their contexts and waits for them to return), gives this node's
// unfinished tasks back to the queue without counting the attempt, and
// closes the database. Tasks whose work was to be finished later by the
// client are given back too: finish them before closing, or they run again.
func (d *Dispatcher) Close(ctx context.Context) error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return ErrClosed
	}
	started := d.started
	if started {
		d.loops.Close()
		d.loops.Cancel(nil)
	}
	d.mu.Unlock()
	var errs []error
	if started {
		// Waits on a context that never ends return nil.
		errs = append(errs, d.loops.Wait(context.Background())) // each loop returns promptly once its context ends
		if d.handlers.Wait(ctx) != nil {
			d.handlers.Cancel(context.Canceled)
			errs = append(errs, d.handlers.Wait(context.Background())) // handlers get their context cancelled; they must return
		}
		d.handlers.Close()
		d.handlers.Cancel(context.Canceled)
		errs = append(errs, d.stopFinishers())
		ctx, cancel := d.opCtx()
		defer cancel()
		if rc := d.cfg.Regcenter; rc != nil {
			if err := rc.Delete(ctx, zkNodes+"/"+url.PathEscape(d.Node()), -1); err != nil && !errors.Is(err, regcenter.ErrNoNode) && !errors.Is(err, regcenter.ErrClosed) {
				errs = append(errs, fmt.Errorf("dispatch: remove the lease's registry node: %w", err))
			}
		}
		out, err := d.st.dropNode(ctx, d.Node(), d.clock.Now())
		if err != nil {
			errs = append(errs, fmt.Errorf("dispatch: give back tasks: %w", err))
		} else if len(out) > 0 {
			d.log.Info("dispatch: gave unfinished tasks back", "count", len(out))
			if d.st.d == postgresDialect {
				if _, err := d.st.db.ExecContext(ctx, `SELECT pg_notify('`+notifyChannel+`', '')`); err != nil {
					errs = append(errs, fmt.Errorf("dispatch: notify fetchers: %w", err))
				}
			}
		}
	}
	errs = append(errs, d.stopFinishers())
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.endLife()
	if err := d.st.db.Close(); err != nil {
		errs = append(errs, fmt.Errorf("dispatch: close database: %w", err))
	}
	return errors.Join(errs...)
}

// opCtx bounds one operation done on the dispatcher's own behalf.
func (d *Dispatcher) opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(d.life, opTimeout)
}

// leaseFresh tells whether this node renewed its lease recently enough to
// be sure it still holds it: within LeaseTTL − SweepInterval.
func (d *Dispatcher) leaseFresh(now time.Time) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.node, now.Sub(d.renewedAt) < d.cfg.LeaseTTL-d.cfg.SweepInterval
}

// fetchLoop claims startable tasks: at once while a round fills its batch,
// then when woken (an assignment, a freed slot, a notification) or at the
// next expected start, or after MaxWait at the latest.
func (d *Dispatcher) fetchLoop(ctx context.Context) {
	for ctx.Err() == nil {
		n, err := d.claimRound(ctx)
		if err != nil && ctx.Err() == nil {
			d.log.Warn("dispatch: claim round failed", "err", err)
		}
		if err == nil && n >= d.cfg.BatchSize {
			continue
		}
		wait := d.cfg.MaxWait
		if err == nil {
			now := d.clock.Now()
			next, ok, nerr := d.st.nextRunAt(ctx, now)
			if nerr != nil && ctx.Err() == nil {
				d.log.Warn("dispatch: read next start", "err", nerr)
			}
			if ok && next.Sub(now) < wait {
				wait = max(next.Sub(now), 0)
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-d.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// claimRound runs one claim transaction and hands the started tasks to
// their handlers. It returns how many tasks the round took.
func (d *Dispatcher) claimRound(ctx context.Context) (int, error) {
	now := d.clock.Now()
	node, fresh := d.leaseFresh(now)
	if !fresh {
		return 0, nil // claim nothing on a lease we cannot vouch for
	}
	var claimed time.Time // when the claim began, for the dispatch spans
	if d.tracer != nil {
		claimed = time.Now()
	}
	c, err := d.st.claim(ctx, node, now, d.cfg.BatchSize)
	if err != nil {
		return 0, err
	}
	for _, t := range c.lateFailed {
		d.stats.lateFailed.Add(1)
		d.stats.failed.Add(1)
		d.log.Warn("dispatch: task failed: late under the worker's fail policy", "task", t.UUID, "worker", t.Worker, "acceptable_start", t.AcceptableStart)
		d.notifyFail(t, "")
	}
	for _, t := range c.started {
		d.stats.started.Add(1)
		if t.Late {
			d.stats.late.Add(1)
			d.log.Info("dispatch: late start", "task", t.UUID, "worker", t.Worker, "by", t.StartedAt.Sub(t.AcceptableStart))
		}
		d.runHandler(t, claimed)
	}
	return c.considered, nil
}

// runHandler starts the start listener for one claimed attempt (claimed:
// when its claim began, for its span). Its context lives on after the
// listener returns, for work that goes on (finished later through
// Finish): it ends when the attempt ends — finish, timeout, cancel, lost
// lease — or the dispatcher closes.
func (d *Dispatcher) runHandler(t Task, claimed time.Time) {
	d.mu.Lock()
	hctx, cancel := context.WithTimeout(d.handlers.Context(), t.Timeout)
	run := &attemptRun{attempt: t.Attempt, cancel: cancel}
	d.running[t.UUID] = run
	d.mu.Unlock()
	context.AfterFunc(hctx, func() {
		d.mu.Lock()
		if d.running[t.UUID] == run {
			delete(d.running, t.UUID)
		}
		d.mu.Unlock()
	})
	d.goHandler(func() {
		err := d.dispatchStart(hctx, t, claimed)
		octx, ocancel := d.opCtx()
		defer ocancel()
		switch {
		case err != nil:
			r, ferr := d.st.failAttempt(octx, t.UUID, t.Attempt, "start listener: "+err.Error(), d.clock.Now(), d.cfg.Backoff.Delay)
			if ferr != nil {
				d.resultRejected(t, ferr, false)
				return
			}
			d.afterRelease([]released{r})
		case d.cfg.FinishOnReturn:
			if ferr := d.FinishAttempt(octx, t.UUID, t.Attempt); ferr != nil {
				d.resultRejected(t, ferr, errors.Is(ferr, ErrStaleLease))
			}
		}
	})
}

func (d *Dispatcher) callStart(ctx context.Context, t Task) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return d.cfg.OnStart(ctx, t)
}

// resultRejected logs a handler's result the store refused; counted says
// whether FinishAttempt already counted it as stale.
func (d *Dispatcher) resultRejected(t Task, err error, counted bool) {
	if errors.Is(err, ErrStaleLease) || errors.Is(err, ErrNotRunning) {
		if !counted {
			d.stats.stale.Add(1)
		}
		d.log.Info("dispatch: result of an attempt that no longer holds its task", "task", t.UUID, "attempt", t.Attempt, "err", err)
		return
	}
	if errors.Is(err, ErrClosed) {
		d.log.Warn("dispatch: result after close; the task will be given back or retried", "task", t.UUID, "attempt", t.Attempt)
		return
	}
	d.log.Error("dispatch: record an attempt's result", "task", t.UUID, "attempt", t.Attempt, "err", err)
}

// afterRelease counts freed tasks, runs the fail listener for those that
// failed for good and wakes the fetcher for the freed slots.
func (d *Dispatcher) afterRelease(rs []released) {
	for _, r := range rs {
		d.cancelLocal(r.UUID, r.Attempt)
		if r.Failed {
			d.stats.failed.Add(1)
			d.log.Warn("dispatch: task failed for good", "task", r.UUID, "worker", r.Worker, "attempts", r.Attempt, "reason", r.LastError)
			d.notifyFail(r.Task, r.HeldBy)
		} else {
			d.stats.retried.Add(1)
		}
	}
	if len(rs) > 0 {
		d.kick()
	}
}

// notifyFail runs the fail listener for t, which failed for good; node is
// the lease that held its last attempt ("" if none did).
func (d *Dispatcher) notifyFail(t Task, node string) {
	if d.cfg.OnFail != nil {
		d.goHandler(func() { d.notice(FailSpanName, d.cfg.OnFail, t, node) })
	}
}

// cancelLocal cancels the handler of uuid if it runs here (attempt 0: any).
func (d *Dispatcher) cancelLocal(uuid string, attempt int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r := d.running[uuid]; r != nil && (attempt == 0 || r.attempt == attempt) {
		delete(d.running, uuid)
		r.cancel()
	}
}

// pruneAttempt cancels the handler of one attempt the store says no
// longer holds its task, unless a Finish of that task is in flight here
// (the Finish ends the attempt itself once it has its answer).
func (d *Dispatcher) pruneAttempt(uuid string, attempt int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.finishing[uuid] > 0 {
		return
	}
	if r := d.running[uuid]; r != nil && r.attempt == attempt {
		delete(d.running, uuid)
		r.cancel()
	}
}

// cancelAllLocal cancels every handler running here (the lease is lost).
func (d *Dispatcher) cancelAllLocal() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for id, r := range d.running {
		r.cancel()
		delete(d.running, id)
	}
}

// sweepLoop frees overdue and orphaned tasks at once (those a crashed
// node left), then renews the lease and frees them every SweepInterval.
// The first round does not renew: Start has just registered the lease, and
// a renewal sent late by a slow first round would carry a stale time.
func (d *Dispatcher) sweepLoop(ctx context.Context) {
	t := time.NewTicker(d.cfg.SweepInterval)
	defer t.Stop()
	d.free(ctx, d.clock.Now())
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		d.sweep(ctx)
	}
}

// sweep is one round of the sweeper: renew the lease, then free.
func (d *Dispatcher) sweep(ctx context.Context) {
	now := d.clock.Now()
	d.renew(ctx, now)
	if ctx.Err() != nil {
		return
	}
	d.free(ctx, now)
}

// free times out overdue attempts, ends local handlers whose tasks are no
// longer this node's, and frees the tasks of leases lapsed by now.
func (d *Dispatcher) free(ctx context.Context, now time.Time) {
	for {
		rs, err := d.st.expire(ctx, now, 500, d.cfg.Backoff.Delay)
		if err != nil {
			if ctx.Err() == nil {
				d.log.Warn("dispatch: time out overdue tasks", "err", err)
			}
			break
		}
		for _, r := range rs {
			d.stats.timedOut.Add(1)
			d.log.Info("dispatch: attempt timed out", "task", r.UUID, "worker", r.Worker, "attempt", r.Attempt)
			if d.cfg.OnTimeout != nil {
				task, node := r.Task, r.HeldBy
				d.goHandler(func() { d.notice(TimeoutSpanName, d.cfg.OnTimeout, task, node) })
			}
		}
		d.afterRelease(rs)
		if len(rs) < 500 {
			break
		}
	}
	if err := d.pruneLocal(ctx); err != nil && ctx.Err() == nil {
		d.log.Warn("dispatch: check local attempts against the store", "err", err)
	}
	dead, rs, err := d.st.reap(ctx, now, 10000, d.cfg.Backoff.Delay)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("dispatch: reap lapsed leases", "err", err)
		}
		return
	}
	if len(dead) > 0 || len(rs) > 0 {
		d.log.Info("dispatch: reaped lapsed leases", "nodes", dead, "tasks", len(rs))
	}
	d.stats.reaped.Add(int64(len(rs)))
	d.afterRelease(rs)
}

// pruneLocal ends the contexts of local attempts that no longer hold their
// task in the store: finished or cancelled through another node or
// process, or freed. So a Cancel anywhere reaches the handler within a
// SweepInterval.
func (d *Dispatcher) pruneLocal(ctx context.Context) error {
	d.mu.Lock()
	node := d.node
	local := make(map[string]int, len(d.running))
	for id, r := range d.running {
		local[id] = r.attempt
	}
	d.mu.Unlock()
	ids := make([]string, 0, len(local))
	for id := range local {
		ids = append(ids, id)
	}
	for len(ids) > 0 {
		part := ids[:min(len(ids), 500)]
		ids = ids[len(part):]
		holding, err := d.st.holding(ctx, part, node)
		if err != nil {
			return err
		}
		for _, id := range part {
			if a, ok := holding[id]; !ok || a != local[id] {
				d.pruneAttempt(id, local[id])
			}
		}
	}
	return nil
}

// renew extends this node's lease. If the lease row is gone (it lapsed and
// was reaped), the node's handlers are cancelled — their tasks belong to
// others now — and it registers a new lease. If renewing fails for long
// enough that the lease may lapse, the handlers are cancelled as well.
func (d *Dispatcher) renew(ctx context.Context, now time.Time) {
	node := d.Node()
	ok, err := d.st.renewNode(ctx, node, now.Add(d.cfg.LeaseTTL))
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		d.log.Warn("dispatch: renew lease", "err", err)
		if _, fresh := d.leaseFresh(now); !fresh {
			d.log.Error("dispatch: lease may lapse: cancelling running handlers", "lease", node)
			d.cancelAllLocal()
		}
		return
	}
	if ok {
		d.mu.Lock()
		d.renewedAt = now
		d.mu.Unlock()
		return
	}
	d.stats.leaseLost.Add(1)
	d.log.Error("dispatch: lease lost: its tasks were freed; cancelling handlers and registering anew", "lease", node)
	d.cancelAllLocal()
	// The new lease runs from now, not from when this sweep began: a sweep
	// that took long (a slow database, or another sweep running meanwhile)
	// would otherwise register a lease already partly lapsed, which other
	// nodes may reap at once.
	regAt := d.clock.Now()
	fresh, err := d.registerLease(ctx, regAt)
	if err != nil {
		d.log.Error("dispatch: register a new lease", "err", err)
		return
	}
	d.mu.Lock()
	d.node, d.renewedAt = fresh, regAt
	d.mu.Unlock()
	d.kick()
}

// backOff waits *delay, or until ctx ends, then doubles *delay up to 5 s:
// the pause between attempts of the loops that reconnect.
func backOff(ctx context.Context, delay *time.Duration) {
	t := time.NewTimer(*delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	*delay = min(2**delay, 5*time.Second)
}

// listenLoop keeps a LISTEN connection (postgres) and wakes the fetcher
// on every notification: a new assignment or a slot freed elsewhere.
func (d *Dispatcher) listenLoop(ctx context.Context) {
	delay := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := d.listenConn(ctx)
		if ctx.Err() != nil {
			return
		}
		d.log.Warn("dispatch: LISTEN connection lost; fetcher falls back to MaxWait polls until it is back", "err", err)
		backOff(ctx, &delay)
	}
}

func (d *Dispatcher) listen(ctx context.Context) error {
	defer d.listenAlive.Store(false)
	return d.st.drv.Listen(ctx, d.cfg.DSN, notifyChannel, func() {
		d.listenAlive.Store(true)
		d.kick() // anything assigned while not listening
	}, d.kick)
}
