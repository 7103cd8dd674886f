package book

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/internal/lazymap"

	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/regcenter"
)

// Book is this instance's account of a job's items: which run here (and
// the runs beside them), the debts a reservation takes in the same step as
// it reserves, the waits on owed items running elsewhere, and whether the
// registration still takes fires. A reservation, a release and stop's
// leave each change several of these at once, so they share one lock,
// taken only in the Book's methods. The ledger keeps its own lock and is
// called under this one, never the reverse.
type Book struct {
	mu          sync.Mutex
	reg         registration   // this instance's registration
	runs        runAccount     // the items running here
	remoteWaits map[int]func() // watches on owed items running elsewhere

	owed         *Ledger          // shared with the caller, which reads it
	log          *slog.Logger     // the job's
	misfiresOwed *atomic.Int64    // the job's count of debts noted
	now          func() time.Time // the scheduler's clock
	lead         time.Duration    // the scheduler's fire lead
	onIdle       func()           // the last item running here was released
	// followers counts the executions in runs.running that followed a
	// writing one (their after is set): After answers without the lock
	// while there are none, the steady state.
	followers atomic.Int32
}

// Options are what a Book is given by its job and scheduler.
type Options struct {
	// Log is the job's logger.
	Log *slog.Logger
	// MisfiresOwed counts the debts noted (a new debt, or an earlier
	// start of one).
	MisfiresOwed *atomic.Int64
	// Now is the scheduler's clock, and Lead its fire lead: a make-up run
	// reserved now stands for the fires dispatched by then.
	Now  func() time.Time
	Lead time.Duration
	// OnIdle is called, under the book's lock, when the last item running
	// here is released; it must not call the book.
	OnIdle func()
}

// New returns the book of a job whose debts owed keeps.
func New(owed *Ledger, o Options) *Book {
	return &Book{
		// The maps are made at their first key (lazymap).
		owed: owed, log: o.Log, misfiresOwed: o.MisfiresOwed, now: o.Now, lead: o.Lead, onIdle: o.OnIdle,
	}
}

// registration is this instance's registration of the job: a reservation
// and stop's leave read and change it in the same steps as the runs.
type registration struct {
	sess        *regcenter.Session // the session registered under
	stopping    bool               // stop has begun: no new fires
	removed     bool               // the job was removed from the cluster
	heldAtLeave []int              // the assignment this instance gave up when it left
}

// runAccount is what runs here: the items reserved or running, and the
// scheduled fires in flight.
type runAccount struct {
	running map[int]*execution
	// alongside counts, per item, the runs beside the one in running
	// (OverlapAllow); the item leaves running with the last of them.
	alongside map[int]int
	// triggerQueued: a trigger arrived while items ran (see
	// QueueTriggerIfBusy); the release that leaves none running runs it.
	triggerQueued bool
	idle          chan struct{}  // made by a waiter (idleLocked), closed and dropped when items are released
	firing        sync.WaitGroup // scheduled fires in flight (BeginFiring)
}

// execution is a run reserved here.
type execution struct {
	item int
	fire time.Time
	// through is the latest fire the execution stands for, fixed when the
	// item is reserved: a scheduled fire reserved later finds it covered.
	through time.Time
	// replace, once the run has started, cancels it for a fire that
	// replaces it (OverlapReplace); nil before the start, and for runs
	// that cannot be replaced (a RangeJob's).
	replace func()
	// alongside: a run beside the item's execution in the book's runs
	// (OverlapAllow), counted in its alongside rather than kept there.
	alongside bool
	// writing: the run returned and its completion, the item's mark kept,
	// is being written, or waits for the one before it (Writing): the
	// item's next plain fire may follow it (see ReserveFire).
	writing bool
	// written is closed when a writing execution's item is released,
	// once its completion is written or given up; made by the fire that
	// follows it.
	written chan struct{}
	// prev is the writing execution this one follows, until its release
	// (Release: the oldest of a chain of followers first); nil otherwise.
	prev *execution
	// after is prev's written, kept past the release that clears prev:
	// this run's completion waits for it (Book.After).
	after <-chan struct{}
}

// span is the fires the execution stands for.
func (e *execution) span() fireplan.Span { return fireplan.Span{First: e.fire, Last: e.through} }

// ---- the registration ----

// Registered records that the job is registered here under sess.
func (b *Book) Registered(sess *regcenter.Session) {
	b.mu.Lock()
	b.reg.sess = sess
	b.mu.Unlock()
}

// BeginStop marks the registration stopping: no new fires.
func (b *Book) BeginStop() {
	b.mu.Lock()
	b.reg.stopping = true
	b.mu.Unlock()
}

// MarkRemoved records whether the job was removed from the cluster.
func (b *Book) MarkRemoved(removed bool) {
	b.mu.Lock()
	b.reg.removed = removed
	b.mu.Unlock()
}

// Leaving reports, for stop, whether the job is registered under a live
// session and whether it was removed from the cluster.
func (b *Book) Leaving() (registered, removed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reg.sess != nil && b.reg.sess.Err() == nil, b.reg.removed
}

// Stopping reports whether stop has begun here.
func (b *Book) Stopping() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reg.stopping
}

// Session returns the session the job is registered under here (nil
// before it first registers) and whether stop has begun.
func (b *Book) Session() (sess *regcenter.Session, stopping bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reg.sess, b.reg.stopping
}

// RegisteredUnder reports whether the job is registered here under sess,
// and not stopping.
func (b *Book) RegisteredUnder(sess *regcenter.Session) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reg.sess == sess && !b.reg.stopping
}

// BeginFiring counts a scheduled fire in flight, which stop waits for
// (WaitFiring), and reports true; false once stop has begun: the leave
// hands the fire's items over, and no fire may join the wait stop is in.
func (b *Book) BeginFiring() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.reg.stopping {
		return false
	}
	b.runs.firing.Add(1)
	return true
}

// EndFiring ends what BeginFiring began.
func (b *Book) EndFiring() { b.runs.firing.Done() }

// WaitFiring waits for the fires in flight until ctx ends (false). A
// context that never ends is waited for in place.
func (b *Book) WaitFiring(ctx context.Context) bool {
	if ctx.Done() == nil {
		b.runs.firing.Wait()
		return true
	}
	done := make(chan struct{})
	go func() {
		b.runs.firing.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// ---- what runs here ----

// QueueTriggerIfBusy queues a trigger for when the items running here
// are released, if any run, and reports whether it did; Release runs it.
func (b *Book) QueueTriggerIfBusy() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	busy := len(b.runs.running) > 0
	if busy {
		b.runs.triggerQueued = true
	}
	return busy
}

// SteadyOrIdle reports whether no item runs here and nothing is owed
// (the steady state a fire dispatched ahead of its time claims in);
// otherwise it returns a channel closed once the items running here are
// released.
func (b *Book) SteadyOrIdle() (steady bool, idle <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.runs.running) == 0 && b.owed.Settled() {
		return true, nil
	}
	return false, b.idleLocked()
}

// WaitIdle waits until no item runs here, or ctx ends (false).
func (b *Book) WaitIdle(ctx context.Context) bool {
	for {
		b.mu.Lock()
		if len(b.runs.running) == 0 {
			b.mu.Unlock()
			return true
		}
		idle := b.idleLocked()
		b.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return false
		}
	}
}

// idleLocked returns a channel closed once the items running here are
// released. It is made for a waiter, so that a release nobody waits for
// makes none.
func (b *Book) idleLocked() <-chan struct{} {
	if b.runs.idle == nil {
		b.runs.idle = make(chan struct{})
	}
	return b.runs.idle
}

// wakeIdleLocked wakes the waiters of idleLocked.
func (b *Book) wakeIdleLocked() {
	if b.runs.idle != nil {
		close(b.runs.idle)
		b.runs.idle = nil
	}
}

// IsRunning reports whether item is reserved or running here.
func (b *Book) IsRunning(item int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.runs.running[item]
	return ok
}

// RunningCount is how many items run here now.
func (b *Book) RunningCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.runs.running)
}

// ---- the executions ----

// LatestThrough returns the latest fire the executions of items reserved
// here stand for, at the earliest at.
func (b *Book) LatestThrough(at time.Time, items ...int) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, it := range items {
		if e := b.runs.running[it]; e != nil && e.through.After(at) {
			at = e.through
		}
	}
	return at
}

// Started records that the executions of items first..last start as a
// run for the fire at (replace, if not nil, cancels a one-item run for a
// fire that replaces it: it is called under the book's lock, and must not
// call the book), and returns the latest fire they stand for.
func (b *Book) Started(first, last int, at time.Time, replace func()) time.Time {
	through := at
	b.mu.Lock()
	defer b.mu.Unlock()
	for it := first; it <= last; it++ {
		if e := b.runs.running[it]; e != nil {
			e.fire = at
			if e.through.After(through) {
				through = e.through
			}
			if replace != nil {
				e.replace = replace
			}
		}
	}
	return through
}

// ---- waits on items running elsewhere ----

// WroteMisfireNode records that item's misfire node exists.
func (b *Book) WroteMisfireNode(item int) {
	b.mu.Lock()
	b.owed.SetNode(item, true)
	b.mu.Unlock()
}

// WaitRemote keeps cancel, which ends the wait for item's mark elsewhere
// (called under the book's lock when the wait ends: it must not call the
// book), and reports true; false if a wait is set already (cancel is not
// kept).
func (b *Book) WaitRemote(item int, cancel func()) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, dup := b.remoteWaits[item]; dup {
		return false
	}
	lazymap.Set(&b.remoteWaits, item, cancel)
	return true
}

// EndRemoteWait ends the wait for item's mark elsewhere, if any.
func (b *Book) EndRemoteWait(item int) {
	b.mu.Lock()
	b.endRemoteWaitLocked(item)
	b.mu.Unlock()
}

func (b *Book) endRemoteWaitLocked(item int) {
	if c := b.remoteWaits[item]; c != nil {
		c()
		delete(b.remoteWaits, item)
	}
}

// CloseWaits ends nothing itself: it returns the cancels of every wait on
// a mark elsewhere, and drops them, for stop to call.
func (b *Book) CloseWaits() []func() {
	b.mu.Lock()
	defer b.mu.Unlock()
	cancels := make([]func(), 0, len(b.remoteWaits))
	for _, c := range b.remoteWaits {
		cancels = append(cancels, c)
	}
	b.remoteWaits = map[int]func(){}
	return cancels
}
