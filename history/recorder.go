package history

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/internal/retention"
	"github.com/shardjob/shardjob/internal/startstop"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/listener"
)

// Recorder writes the execution history of the schedulers it is plugged
// into: every execution (it is a listener.Listener) and every job.Event
// (HandleEvent). A record is put in a bounded buffer without waiting and
// written by the recorder's own goroutine, in batches; a full buffer drops
// the record and counts it. Open one per process, pass SchedulerOptions to
// job.NewScheduler, and Close it after the scheduler's Shutdown. It is
// safe for concurrent use.
type Recorder struct {
	cfg Config
	st  *store
	log *slog.Logger
	now func() time.Time

	ch       chan entry
	dropSig  chan struct{} // a drop happened: the writer reports it
	flushReq chan waiter
	group    *startstop.Group // the writer and the retention; Close cancels it
	done     chan struct{}    // closed when the writer has ended
	life     context.Context
	endLife  context.CancelFunc

	mu     sync.RWMutex // guards closed against sends in flight
	closed bool

	closeOnce sync.Once
	closeErr  error
	lost      int64 // records still unwritten when the writer ended

	recorded, written, dropped, writeErrors, pruned atomic.Int64
	unreported                                      atomic.Int64 // drops not logged yet
	nextReport                                      time.Time    // writer's: when drops may be logged again
}

// entry is one record waiting in the buffer.
type entry struct {
	isEvent bool
	exec    listener.Execution
	ev      job.Event
}

// waiter is a Flush waiting until target records are written or dropped.
type waiter struct {
	target int64
	c      chan error
}

// Open connects to the database, creates the tables if they are missing
// and starts the writer and the retention. Close it to stop them.
func Open(ctx context.Context, cfg Config) (*Recorder, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	st, err := openStore(ctx, cfg, true)
	if err != nil {
		return nil, err
	}
	life, end := context.WithCancel(context.WithoutCancel(ctx))
	r := &Recorder{
		cfg: cfg, st: st, log: cfg.Logger, now: time.Now,
		ch: make(chan entry, cfg.BufferSize), dropSig: make(chan struct{}, 1), flushReq: make(chan waiter),
		group: startstop.New(ctx), done: make(chan struct{}), life: life, endLife: end,
	}
	// A new group refuses nothing; were it to, what started is cancelled.
	if err := errors.Join(r.group.Go(r.run), r.group.Go(r.retain)); err != nil {
		r.group.Cancel(err)
		end()
		return nil, errors.Join(err, st.close())
	}
	return r, nil
}

// SchedulerOptions returns the options that plug r into a scheduler:
// job.WithListener(r) and job.WithEventHandler(r.HandleEvent).
//
//	sched, err := job.NewScheduler(rc, append(opts, rec.SchedulerOptions()...)...)
func (r *Recorder) SchedulerOptions() []job.Option {
	return []job.Option{job.WithListener(r), job.WithEventHandler(r.HandleEvent)}
}

// BeforeExecution does nothing: an execution is recorded once it ended.
func (r *Recorder) BeforeExecution(listener.Execution) {}

// AfterExecution records an execution. It never waits: when the buffer
// is full the record is dropped and counted.
func (r *Recorder) AfterExecution(e listener.Execution) { r.offer(entry{exec: e}) }

// HandleEvent records a job.Event, for job.WithEventHandler. It never
// waits, as AfterExecution.
func (r *Recorder) HandleEvent(ev job.Event) { r.offer(entry{isEvent: true, ev: ev}) }

func (r *Recorder) offer(e entry) {
	r.recorded.Add(1)
	sent := false
	r.mu.RLock()
	if !r.closed {
		select {
		case r.ch <- e:
			sent = true
		default:
		}
	}
	r.mu.RUnlock()
	if !sent {
		r.dropped.Add(1)
		r.unreported.Add(1)
		select {
		case r.dropSig <- struct{}{}:
		default:
		}
	}
}

// Stats returns what r did so far.
func (r *Recorder) Stats() Stats {
	// Read the outcomes before the offers: every record is counted as
	// recorded before its outcome, so Buffered is never negative.
	written, dropped := r.written.Load(), r.dropped.Load()
	recorded := r.recorded.Load()
	return Stats{Recorded: recorded, Written: written, Dropped: dropped, WriteErrors: r.writeErrors.Load(),
		Buffered: recorded - written - dropped, Pruned: r.pruned.Load()}
}

// Query returns a page of executions, newest first.
func (r *Recorder) Query(ctx context.Context, f Filter) (Page, error) {
	return r.st.queryExecutions(ctx, f)
}

// QueryEvents returns a page of events, newest first.
func (r *Recorder) QueryEvents(ctx context.Context, f Filter) (EventPage, error) {
	return r.st.queryEvents(ctx, f)
}

// Flush waits until every record offered before the call is written (or
// dropped), or ctx ends. While the database is down it waits for it.
func (r *Recorder) Flush(ctx context.Context) error {
	w := waiter{target: r.recorded.Load(), c: make(chan error, 1)}
	select {
	case r.flushReq <- w:
	case <-r.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-w.c:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Prune runs a retention pass now: it deletes rows older than
// Config.MaxAge (audit entries: older than Config.AuditMaxAge) and rows
// beyond the newest Config.MaxRows of each table,
// at most Config.RetentionBatch rows per statement and a bounded number of
// statements. The recorder also runs one every Config.RetentionInterval.
func (r *Recorder) Prune(ctx context.Context) (Pruned, error) {
	now := r.now()
	p, err := r.st.prune(ctx, now.Add(-r.cfg.MaxAge), now.Add(-r.cfg.AuditMaxAge), r.cfg.MaxRows, r.cfg.RetentionBatch)
	r.pruned.Add(p.Executions + p.Events + p.Audit)
	return p, err
}

// retain runs a retention pass every RetentionInterval until Close
// cancels ctx.
func (r *Recorder) retain(ctx context.Context) {
	retention.Loop{
		Interval: r.cfg.RetentionInterval, Timeout: max(time.Minute, 6*r.cfg.WriteTimeout),
		Log: r.log, Name: "history",
		Pass: func(ctx context.Context) (bool, error) {
			p, err := r.Prune(ctx)
			if p.Executions+p.Events+p.Audit > 0 {
				r.log.Debug("history: retention", "executions", p.Executions, "events", p.Events, "audit", p.Audit)
			}
			return false, err
		},
	}.Run(ctx)
}

// Close stops taking records, writes what the buffer holds and closes the
// database. It waits at most until ctx ends: records still unwritten then
// are counted as dropped and the error says how many. Close the recorder
// after the schedulers it records have shut down; records offered after
// Close are dropped.
func (r *Recorder) Close(ctx context.Context) error {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		r.closed = true
		r.mu.Unlock()
		r.group.Close()
		r.group.Cancel(nil)
		select {
		case <-r.done:
		case <-ctx.Done():
			// Cut the writer's database calls and retry waits short.
			r.endLife()
		}
		r.endLife()
		var errs []error
		// Once life is cut, the writer and the retention end without a
		// deadline of ours: a Wait on a context that never ends returns nil.
		if err := r.group.Wait(context.Background()); err != nil {
			errs = append(errs, err)
		}
		if r.lost > 0 {
			errs = append(errs, fmt.Errorf("history: %d records not written at close: %w", r.lost, context.Cause(ctx)))
		}
		if err := r.st.close(); err != nil {
			errs = append(errs, fmt.Errorf("history: closing the database: %w", err))
		}
		r.closeErr = errors.Join(errs...)
	})
	return r.closeErr
}

// writer is the state of the writer goroutine.
type writer struct {
	batch    []entry
	retry    *time.Timer // armed while a failed batch waits to be retried
	retryC   <-chan time.Time
	backoff  time.Duration
	failures int       // writes failed in a row
	failLog  time.Time // when a failure was last logged
	report   *time.Timer
	reportC  <-chan time.Time // armed while drops wait for the interval to end
	waiters  []waiter
}

// run is the writer goroutine: it takes records from the buffer, writes
// them in batches, retries failed batches with backoff and reports drops,
// until Close cancels ctx.
func (r *Recorder) run(ctx context.Context) {
	defer close(r.done)
	w := &writer{batch: make([]entry, 0, r.cfg.BatchSize)}
	tick := time.NewTicker(r.cfg.FlushInterval)
	defer tick.Stop()
	defer w.stopTimers()
	for {
		in := r.ch
		if w.retryC != nil || len(w.batch) >= r.cfg.BatchSize {
			in = nil // let the buffer hold the records meanwhile
		}
		flush := false
		select {
		case e := <-in:
			w.batch = append(w.batch, e)
			flush = len(w.batch) >= r.cfg.BatchSize
		case <-tick.C:
			flush = w.retryC == nil
		case <-w.retryC:
			w.retryC = nil
			flush = true
		case f := <-r.flushReq:
			w.waiters = append(w.waiters, f)
			flush = w.retryC == nil
		case <-r.dropSig:
			r.reportDrops(w, false)
		case <-w.reportC:
			w.reportC = nil
			r.reportDrops(w, false)
		case <-ctx.Done():
			r.finish(w)
			return
		}
		if flush {
			r.drain(w)
		}
		r.answer(w, nil)
	}
}

// drain writes what the buffer holds, a batch at a time, until it is
// empty or a write fails (a retry is then armed). It takes at most what
// the buffer held when it began, so that a steady stream of records does
// not keep the writer from its other work. It reports whether everything
// was written.
func (r *Recorder) drain(w *writer) bool {
	for range len(r.ch)/r.cfg.BatchSize + 1 {
	fill:
		for len(w.batch) < r.cfg.BatchSize {
			select {
			case e := <-r.ch:
				w.batch = append(w.batch, e)
			default:
				break fill
			}
		}
		if len(w.batch) == 0 {
			return true
		}
		if err := r.write(w.batch); err != nil {
			r.failed(w, err)
			return false
		}
		if w.failures > 0 {
			r.log.Info("history: writing again", "failedWrites", w.failures)
			w.failures, w.backoff = 0, 0
		}
		clear(w.batch)
		w.batch = w.batch[:0]
	}
	return len(r.ch) == 0
}

// write commits one batch.
func (r *Recorder) write(batch []entry) error {
	var execs []Execution
	var events []Event
	for _, e := range batch {
		if e.isEvent {
			events = append(events, r.eventRow(e.ev))
		} else {
			execs = append(execs, r.execRow(e.exec))
		}
	}
	ctx, cancel := context.WithTimeout(r.life, r.cfg.WriteTimeout)
	defer cancel()
	if err := r.st.insert(ctx, execs, events); err != nil {
		r.writeErrors.Add(1)
		return err
	}
	r.written.Add(int64(len(batch)))
	return nil
}

// failed arms the retry of the batch and logs the failure: the first of
// a run of failures at once, then at most once per DropLogInterval.
func (r *Recorder) failed(w *writer, err error) {
	w.failures++
	if w.backoff == 0 {
		w.backoff = max(r.cfg.FlushInterval/10, 10*time.Millisecond)
	} else {
		w.backoff = min(2*w.backoff, r.cfg.MaxBackoff)
	}
	w.retry = time.NewTimer(w.backoff)
	w.retryC = w.retry.C
	now := r.now()
	if w.failures == 1 || now.Sub(w.failLog) >= r.cfg.DropLogInterval {
		w.failLog = now
		r.log.Warn("history: writing to the database failed; retrying while the buffer holds", "err", err,
			"failedWrites", w.failures, "buffered", len(r.ch)+len(w.batch), "bufferSize", r.cfg.BufferSize, "retryIn", w.backoff)
	}
}

// reportDrops logs the drops not logged yet: at once if no drop was
// logged within DropLogInterval, else once that interval has passed (a
// timer is armed). final logs them whatever the interval.
func (r *Recorder) reportDrops(w *writer, final bool) {
	if r.unreported.Load() == 0 {
		return
	}
	now := r.now()
	if !final && now.Before(r.nextReport) {
		if w.reportC == nil {
			w.report = time.NewTimer(r.nextReport.Sub(now))
			w.reportC = w.report.C
		}
		return
	}
	n := r.unreported.Swap(0)
	r.nextReport = now.Add(r.cfg.DropLogInterval)
	r.log.Warn("history: records dropped: the buffer was full or the recorder closed; the database is slow or down",
		"dropped", n, "droppedTotal", r.dropped.Load(), "bufferSize", r.cfg.BufferSize, "nextReportIn", r.cfg.DropLogInterval)
}

// answer tells the Flush calls whose records are all written or dropped;
// err, when not nil, goes to every one.
func (r *Recorder) answer(w *writer, err error) {
	if len(w.waiters) == 0 {
		return
	}
	settled := r.written.Load() + r.dropped.Load()
	keep := w.waiters[:0]
	for _, f := range w.waiters {
		switch {
		case err != nil:
			f.c <- err
		case settled >= f.target:
			f.c <- nil
		default:
			keep = append(keep, f)
		}
	}
	w.waiters = keep
}

// finish writes what is left at Close, retrying until Close's deadline
// cuts r.life; what is still unwritten then is dropped.
func (r *Recorder) finish(w *writer) {
	for r.life.Err() == nil {
		if w.retryC != nil {
			select {
			case <-w.retryC:
				w.retryC = nil
			case <-r.life.Done():
				continue
			}
		}
		if r.drain(w) && len(w.batch) == 0 {
			break
		}
	}
	lost := int64(len(w.batch))
	for {
		select {
		case <-r.ch:
			lost++
			continue
		default:
		}
		break
	}
	w.batch = nil
	r.lost = lost
	r.dropped.Add(lost)
	r.unreported.Add(lost)
	r.reportDrops(w, true)
	r.answer(w, nil)
	r.answer(w, ErrClosed)
}

func (w *writer) stopTimers() {
	for _, t := range []*time.Timer{w.retry, w.report} {
		if t != nil {
			t.Stop()
		}
	}
}

// execRow is what is stored of an execution.
func (r *Recorder) execRow(e listener.Execution) Execution {
	row := Execution{Job: oneLine(e.Job, 512), Item: e.Item, TaskID: oneLine(e.TaskID, 512), FireTime: e.FireTime,
		Kind: oneLine(e.Kind, 64), Server: oneLine(e.ServerID, 256), Start: e.Begin, End: e.End, Result: ResultOf(e.Err)}
	if e.Err != nil {
		row.Error = oneLine(e.Err.Error(), r.cfg.MaxErrorLength)
	}
	row.Output = storedOutput(e.Output)
	row.Attempt = max(e.Attempt, 1)
	if row.Start.IsZero() {
		row.Start = r.now()
	}
	if row.End.IsZero() {
		row.End = row.Start
	}
	if row.FireTime.IsZero() {
		row.FireTime = row.Start
	}
	return row
}

// eventRow is what is stored of an event.
func (r *Recorder) eventRow(ev job.Event) Event {
	row := Event{Job: oneLine(ev.Job, 512), Server: oneLine(ev.Server, 256), Kind: oneLine(string(ev.Kind), 64),
		Units: ev.Units, Threshold: ev.Threshold, Peer: oneLine(ev.Peer, 256), Detail: oneLine(ev.Detail, r.cfg.MaxErrorLength), At: ev.At}
	if ev.Err != nil {
		row.Error = oneLine(ev.Err.Error(), r.cfg.MaxErrorLength)
	}
	if row.At.IsZero() {
		row.At = r.now()
	}
	return row
}

// Reader reads a history database without writing to it: for tools such
// as the shardjob command.
type Reader struct {
	st *store
}

// OpenReader connects to a history database for reading. An SQLite file
// that does not exist, or a database without the history tables, is
// ErrNoDatabase. Only Driver and DSN of cfg are used (and validated).
func OpenReader(ctx context.Context, cfg Config) (*Reader, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	st, err := openStore(ctx, cfg, false)
	if err != nil {
		return nil, err
	}
	return &Reader{st: st}, nil
}

// Query returns a page of executions, newest first.
func (r *Reader) Query(ctx context.Context, f Filter) (Page, error) {
	return r.st.queryExecutions(ctx, f)
}

// QueryEvents returns a page of events, newest first.
func (r *Reader) QueryEvents(ctx context.Context, f Filter) (EventPage, error) {
	return r.st.queryEvents(ctx, f)
}

// Close closes the database.
func (r *Reader) Close() error { return r.st.close() }
