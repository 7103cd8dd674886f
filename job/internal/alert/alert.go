package alert

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

// Kind says what an alert reports.
type Kind string

// Alert kinds.
const (
	// KindLate: a fire's runs had not all returned within the late bound.
	KindLate Kind = "late"
	// KindNotRun: the job had no successful run within its bound.
	KindNotRun Kind = "not-run"
)

// Namespace-level nodes of the alerts. Their names begin with '.', which
// no job name may.
const (
	// Root is the parent of the alerts' namespace nodes.
	Root = "/.alerts"
	// Jobs indexes the jobs with alerts: one child per job.
	Jobs = Root + "/jobs"
	// LeaderLatch and LeaderHost elect the namespace's checker.
	LeaderLatch = Root + "/leader/latch"
	// LeaderHost holds the checker's server id.
	LeaderHost = Root + "/leader/host"
)

// Entry is a job's node in the index.
func Entry(job string) string { return Jobs + "/" + job }

// LateDir is the parent of a job's late fire nodes.
func LateDir(job string) string { return "/" + job + "/alerts/late" }

// LateNode is the node that makes fire's late alert once.
func LateNode(job string, fire time.Time) string {
	return LateDir(job) + "/" + strconv.FormatInt(fire.UnixMilli(), 10)
}

// Policy is a job's bounds; each is off at 0.
type Policy struct {
	Late, NotRunFor time.Duration
}

// Raised is an alert to raise.
type Raised struct {
	Kind Kind
	Job  string
	// Fire is the late fire; for KindNotRun the last success known (zero:
	// never).
	Fire time.Time
	// Bound is the bound passed.
	Bound time.Duration
}

// Err says what r reports, wrapping late for KindLate and notRun for
// KindNotRun (the caller's sentinels).
func (r Raised) Err(late, notRun error) error {
	if r.Kind == KindLate {
		return fmt.Errorf("%w: job %q fire %s had not completed %v after its time", late, r.Job,
			r.Fire.UTC().Format(time.RFC3339Nano), r.Bound)
	}
	last := "never ran"
	if !r.Fire.IsZero() {
		last = "last ran " + r.Fire.UTC().Format(time.RFC3339)
	}
	return fmt.Errorf("%w: job %q had no successful run for %v (%s)", notRun, r.Job, r.Bound, last)
}

// Options are a Book's collaborators.
type Options struct {
	RC  regcenter.Center
	Now func() time.Time
	// AfterFunc calls f once the clock reads at; the function it returns
	// stops the call.
	AfterFunc func(at time.Time, f func()) (stop func() bool)
	// Raise is called on Run's goroutine for each alert this instance
	// raises, with the call's context.
	Raise func(ctx context.Context, r Raised)
	// Server is written into the nodes, for operators.
	Server string
	// Timeout bounds each alert's registry work.
	Timeout time.Duration
	Log     *slog.Logger
}

// queueLen bounds the Book's pending registry work; what does not fit is
// dropped and logged (a late fire another instance may raise; a success
// the next one publishes).
const queueLen = 1024

// lateRetain is the least time a late fire's node is kept: an instance
// noticing the same fire later finds it.
const lateRetain = time.Hour

// Book is one scheduler's alert bookkeeping.
type Book struct {
	o        Options
	attempts atomic.Int64  // late fires tried (won or lost), for tests
	work     chan task     // late fires to raise
	kick     chan struct{} // pubs has names

	pubMu sync.Mutex
	pubs  []string // jobs whose entry is to be published

	mu    sync.Mutex
	jobs  map[string]*jobState
	fires map[fireKey]*pending
}

type jobState struct {
	policy      Policy
	lastSuccess time.Time // the latest successful run here
	published   time.Time // the success last written to the entry
	queued      bool      // a publish task is queued
	late        atomic.Int64
}

type fireKey struct {
	job  string
	fire int64
}

type pending struct {
	runs    int
	stop    func() bool
	alerted bool
}

type task struct {
	job   string
	fire  time.Time
	bound time.Duration
}

// NewBook returns an empty book.
func NewBook(o Options) *Book {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	return &Book{o: o, work: make(chan task, queueLen), kick: make(chan struct{}, 1), jobs: map[string]*jobState{}, fires: map[fireKey]*pending{}}
}

// Set gives job its policy (at registration, and when its config
// changes) and queues its entry's publication when it has a bound.
func (b *Book) Set(job string, p Policy) {
	b.mu.Lock()
	st := b.state(job)
	st.policy = p
	queue := p != Policy{} && !st.queued
	if queue {
		st.queued = true
	}
	b.mu.Unlock()
	if queue {
		b.queuePublish(job)
	}
}

// queuePublish queues job's entry for Run to publish.
func (b *Book) queuePublish(job string) {
	b.pubMu.Lock()
	b.pubs = append(b.pubs, job)
	b.pubMu.Unlock()
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// Forget drops job (removed or stopped here) and stops its timers.
func (b *Book) Forget(job string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.jobs, job)
	for k, p := range b.fires {
		if k.job == job {
			if p.stop != nil {
				p.stop()
			}
			delete(b.fires, k)
		}
	}
}

func (b *Book) state(job string) *jobState {
	st := b.jobs[job]
	if st == nil {
		st = &jobState{}
		b.jobs[job] = st
	}
	return st
}

// Begin notes a run of job's fire beginning here.
func (b *Book) Begin(job string, fire time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.jobs[job]
	if st == nil || st.policy.Late <= 0 {
		return
	}
	k := fireKey{job, fire.UnixMilli()}
	p := b.fires[k]
	if p == nil {
		p = &pending{}
		b.fires[k] = p
		late := st.policy.Late
		p.stop = b.o.AfterFunc(fire.Add(late), func() { b.expire(k, fire, late) })
	}
	p.runs++
}

// End notes a run of job's fire ending here at end; ok when it succeeded.
func (b *Book) End(job string, fire time.Time, ok bool, end time.Time) {
	b.mu.Lock()
	st := b.jobs[job]
	if st == nil {
		b.mu.Unlock()
		return
	}
	k := fireKey{job, fire.UnixMilli()}
	if p := b.fires[k]; p != nil {
		if p.runs--; p.runs <= 0 {
			if p.stop != nil {
				p.stop()
			}
			delete(b.fires, k)
		}
	}
	queue := false
	if ok && end.After(st.lastSuccess) {
		st.lastSuccess = end
		if nr := st.policy.NotRunFor; nr > 0 && !st.queued && end.Sub(st.published) >= nr/8 {
			st.queued, queue = true, true
		}
	}
	b.mu.Unlock()
	if queue {
		b.queuePublish(job)
	}
}

// Attempts counts the late fires this book tried to raise, won or lost.
func (b *Book) Attempts() int64 { return b.attempts.Load() }

// LastSuccess is the end of job's latest successful run here (zero: none
// since this process started).
func (b *Book) LastSuccess(job string) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if st := b.jobs[job]; st != nil {
		return st.lastSuccess
	}
	return time.Time{}
}

// Late counts the late fires this instance raised for job.
func (b *Book) Late(job string) int64 {
	b.mu.Lock()
	st := b.jobs[job]
	b.mu.Unlock()
	if st == nil {
		return 0
	}
	return st.late.Load()
}

func (b *Book) expire(k fireKey, fire time.Time, late time.Duration) {
	b.mu.Lock()
	p := b.fires[k]
	if p == nil || p.runs <= 0 || p.alerted {
		b.mu.Unlock()
		return
	}
	p.alerted = true
	b.mu.Unlock()
	b.offer(task{job: k.job, fire: fire, bound: late})
}

func (b *Book) offer(t task) {
	select {
	case b.work <- t:
	default:
		b.o.Log.Warn("alert work queue full: late fire dropped", "job", t.job, "fire", t.fire)
	}
}

// Run does the book's registry work until ctx ends; each task's work is
// bounded by Options.Timeout.
func (b *Book) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case t := <-b.work:
			tctx, cancel := context.WithTimeout(ctx, b.o.Timeout)
			b.raiseLate(tctx, t)
			cancel()
		case <-b.kick:
			b.pubMu.Lock()
			jobs := b.pubs
			b.pubs = nil
			b.pubMu.Unlock()
			for i, job := range jobs {
				if ctx.Err() != nil {
					return
				}
				tctx, cancel := context.WithTimeout(ctx, b.o.Timeout)
				b.publish(tctx, job)
				cancel()
				if i%64 == 63 {
					// Late fires do not wait behind a start's thousands
					// of entries.
					b.drainLate(ctx)
				}
			}
		}
	}
}

// drainLate raises the late fires queued now.
func (b *Book) drainLate(ctx context.Context) {
	for {
		select {
		case t := <-b.work:
			tctx, cancel := context.WithTimeout(ctx, b.o.Timeout)
			b.raiseLate(tctx, t)
			cancel()
		default:
			return
		}
	}
}

// raiseLate raises t's late fire if this instance is the first to.
func (b *Book) raiseLate(ctx context.Context, t task) {
	won, err := CreateOnce(ctx, b.o.RC, LateNode(t.job, t.fire), []byte(b.o.Server))
	b.attempts.Add(1)
	if err != nil {
		b.o.Log.Warn("late fire not raised: registry", "job", t.job, "fire", t.fire, "err", err)
		return
	}
	if !won {
		return
	}
	b.mu.Lock()
	if st := b.jobs[t.job]; st != nil {
		st.late.Add(1)
	}
	b.mu.Unlock()
	b.o.Raise(ctx, Raised{Kind: KindLate, Job: t.job, Fire: t.fire, Bound: t.bound})
	b.cleanLate(ctx, t.job, t.bound)
}

// CreateOnce creates the persistent node p (and its parents) and reports
// whether this call made it.
func CreateOnce(ctx context.Context, rc regcenter.Center, p string, data []byte) (bool, error) {
	_, err := rc.Create(ctx, p, data, regcenter.Persistent)
	if errors.Is(err, regcenter.ErrNoNode) {
		if err = rc.EnsurePath(ctx, parent(p)); err != nil {
			return false, err
		}
		_, err = rc.Create(ctx, p, data, regcenter.Persistent)
	}
	switch {
	case errors.Is(err, regcenter.ErrNodeExists):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

func parent(p string) string {
	for i := len(p) - 1; i > 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "/"
}

// cleanLate removes job's late nodes older than max(lateRetain, 10×late).
func (b *Book) cleanLate(ctx context.Context, job string, late time.Duration) {
	names, err := b.o.RC.Children(ctx, LateDir(job))
	if err != nil {
		return
	}
	cut := b.o.Now().Add(-max(lateRetain, 10*late)).UnixMilli()
	for _, n := range names {
		if ms, err := strconv.ParseInt(n, 10, 64); err == nil && ms < cut {
			if err := b.o.RC.Delete(ctx, LateDir(job)+"/"+n, -1); err != nil && !errors.Is(err, regcenter.ErrNoNode) {
				b.o.Log.Debug("removing an old late fire node", "job", job, "node", n, "err", err)
			}
		}
	}
}

// EntryValue is a job's node in the index (JSON; times in ms since the
// epoch).
type EntryValue struct {
	Late      int64 `json:"late,omitempty"`
	NotRunFor int64 `json:"notRunFor"`
	// Since is when the job was first registered with a not-run bound.
	Since int64 `json:"since"`
	// Success is the latest successful run written (0: none).
	Success int64 `json:"success,omitempty"`
	// Alerted is when the job was last reported not run (0: never).
	Alerted int64 `json:"alerted,omitempty"`
	// Server wrote the entry last.
	Server string `json:"server,omitempty"`
}

// maxEntry bounds an entry's size; a larger value is refused.
const maxEntry = 4096

// ErrBadEntry means an index entry is not one.
var ErrBadEntry = errors.New("alert: bad index entry")

// DecodeEntry reads an index entry.
func DecodeEntry(data []byte) (EntryValue, error) {
	var e EntryValue
	if len(data) > maxEntry {
		return e, fmt.Errorf("%w: %d bytes", ErrBadEntry, len(data))
	}
	if err := json.Unmarshal(data, &e); err != nil {
		return EntryValue{}, fmt.Errorf("%w: %v", ErrBadEntry, err)
	}
	if e.NotRunFor < 0 || e.Since < 0 || e.Success < 0 || e.Alerted < 0 {
		return EntryValue{}, fmt.Errorf("%w: negative time", ErrBadEntry)
	}
	return e, nil
}

// Due is when e's job is next reported not run: its last success (or
// first registration) plus its bound and the slack of a success written
// behind (an eighth of the bound), or a bound after the last report,
// whichever is later. Zero when it has no bound.
func (e EntryValue) Due() time.Time {
	if e.NotRunFor <= 0 {
		return time.Time{}
	}
	basis := max(e.Success, e.Since)
	due := basis + e.NotRunFor + e.NotRunFor/8
	if e.Alerted > 0 {
		due = max(due, e.Alerted+e.NotRunFor)
	}
	return time.UnixMilli(due)
}

// LastRun is the last success the entry knows (zero: none).
func (e EntryValue) LastRun() time.Time {
	if e.Success == 0 {
		return time.Time{}
	}
	return time.UnixMilli(e.Success)
}

// publish writes job's entry: its bounds, and its last success here if
// newer than the entry's.
func (b *Book) publish(ctx context.Context, job string) {
	b.mu.Lock()
	st := b.jobs[job]
	if st == nil {
		b.mu.Unlock()
		return
	}
	st.queued = false
	pol, success := st.policy, st.lastSuccess
	b.mu.Unlock()
	if pol == (Policy{}) {
		return
	}
	var succ int64
	if !success.IsZero() {
		succ = success.UnixMilli()
	}
	for range 3 {
		data, stat, err := b.o.RC.Get(ctx, Entry(job))
		if errors.Is(err, regcenter.ErrNoNode) {
			e := EntryValue{Late: pol.Late.Milliseconds(), NotRunFor: pol.NotRunFor.Milliseconds(),
				Since: b.o.Now().UnixMilli(), Success: succ, Server: b.o.Server}
			v, _ := json.Marshal(e)
			won, err := CreateOnce(ctx, b.o.RC, Entry(job), v)
			if err != nil {
				b.o.Log.Warn("publishing the job's alert entry", "job", job, "err", err)
				return
			}
			if won {
				b.published(job, success)
				return
			}
			continue
		}
		if err != nil {
			b.o.Log.Warn("reading the job's alert entry", "job", job, "err", err)
			return
		}
		e, derr := DecodeEntry(data)
		if derr != nil {
			e = EntryValue{Since: b.o.Now().UnixMilli()} // a bad value is written over
		}
		next := e
		next.Late, next.NotRunFor = pol.Late.Milliseconds(), pol.NotRunFor.Milliseconds()
		next.Success = max(e.Success, succ)
		if next == e && derr == nil {
			b.published(job, success)
			return
		}
		next.Server = b.o.Server
		v, _ := json.Marshal(next)
		if _, err := b.o.RC.Set(ctx, Entry(job), v, stat.Version); err != nil {
			if errors.Is(err, regcenter.ErrBadVersion) || errors.Is(err, regcenter.ErrNoNode) {
				continue
			}
			b.o.Log.Warn("publishing the job's alert entry", "job", job, "err", err)
			return
		}
		b.published(job, success)
		return
	}
}

func (b *Book) published(job string, success time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if st := b.jobs[job]; st != nil && success.After(st.published) {
		st.published = success
	}
}
