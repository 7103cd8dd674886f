package trigger

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/shardjob/shardjob/job/internal/fireplan"
)

// Clock is the time the Trigger fires by: package job's Clock, whose
// timers are Timers.
type Clock interface {
	// Now returns the clock's current time.
	Now() time.Time
	// AfterFunc calls f in its own goroutine once the clock reads at or
	// later (at once if it does already), and returns a Timer that stops
	// or moves the call.
	AfterFunc(at time.Time, f func()) Timer
}

// Timer is a call arranged by Clock.AfterFunc.
type Timer interface {
	// Stop prevents the call if it has not started yet.
	Stop() bool
	// Reset arranges the call for at instead, whether it was pending,
	// stopped or made already.
	Reset(at time.Time) bool
}

// Trigger fires every job of a scheduler from one goroutine and one timer,
// whatever the number of jobs: a min-heap ordered by the time each job's
// next fire is dispatched. A fire is dispatched lead ahead of its time
// (see fireplan.DueAt), so that its coordination is done when the time
// comes and its run starts then (the fire claims its items early, and
// waits for the fire's time to start its runs). A job whose fires send no
// request (quick) gets no lead: dispatched at its time, a fire does not
// wait for it, and a process with many such jobs wakes once per fire time
// instead of twice.
type Trigger struct {
	mu    sync.Mutex
	h     entryHeap
	byJob map[string]*entry
	wake  chan struct{}
	clock Clock
	lead  time.Duration
}

type entry struct {
	job   string
	sched cron.Schedule
	// fire dispatches the job's fire at its time; it must not block. It is
	// the job's own, so that a dispatch looks nothing up.
	fire func(at time.Time)
	// quick, when not nil, reports whether the job's next fire would send
	// no request: it needs no lead. It must not block. Its answer is kept
	// in isQuick when the entry is set and at each Relead, so that a
	// dispatch does not touch the job's memory (one cache miss per fire
	// in a process with many jobs).
	quick   func() bool
	isQuick bool
	next    time.Time // the next fire's time
	due     time.Time // when it is dispatched: next less its lead
	index   int
}

// setNext makes next the entry's next fire, dispatched lead ahead (see
// lead).
func (e *entry) setNext(next time.Time, lead time.Duration) {
	e.next, e.due = next, fireplan.DueAt(e.sched, next, lead)
}

// lead is the lead of the entry's next fire: lead, or none while the job
// is quick (as last asked: see Relead).
func (e *entry) lead(lead time.Duration) time.Duration {
	if e.isQuick {
		return 0
	}
	return lead
}

// askQuick asks the job whether it is quick now.
func (e *entry) askQuick() { e.isQuick = e.quick != nil && e.quick() }

type entryHeap []*entry

func (h entryHeap) Len() int           { return len(h) }
func (h entryHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h entryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].index = i; h[j].index = j }
func (h *entryHeap) Push(x any)        { e := x.(*entry); e.index = len(*h); *h = append(*h, e) }
func (h *entryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.index = -1
	return e
}

// New returns a Trigger that fires by clock, lead ahead of each fire that
// sends requests. Nothing fires until Run.
func New(clock Clock, lead time.Duration) *Trigger {
	return &Trigger{byJob: map[string]*entry{}, wake: make(chan struct{}, 1), clock: clock, lead: lead}
}

func (t *Trigger) now() time.Time { return t.clock.Now() }

// Set schedules job (replacing an earlier schedule) from now on: fire is
// called with each fire's time, on Run's goroutine, and must not block.
// quick, if not nil, reports when the job's fires need no lead (see
// Trigger); it must not block either.
func (t *Trigger) Set(job string, s cron.Schedule, fire func(at time.Time), quick func() bool) {
	t.mu.Lock()
	if e := t.byJob[job]; e != nil && e.index >= 0 {
		heap.Remove(&t.h, e.index)
	}
	// Not in the heap until pushed: a schedule with no fire left is never
	// pushed, and Remove must not take it out of the heap.
	e := &entry{job: job, sched: s, fire: fire, quick: quick, index: -1}
	e.askQuick()
	e.setNext(s.Next(t.now()), e.lead(t.lead))
	t.byJob[job] = e
	if !e.next.IsZero() {
		heap.Push(&t.h, e)
	}
	t.mu.Unlock()
	t.poke()
}

// Remove unschedules job.
func (t *Trigger) Remove(job string) {
	t.mu.Lock()
	if e := t.byJob[job]; e != nil {
		if e.index >= 0 {
			heap.Remove(&t.h, e.index)
		}
		delete(t.byJob, job)
	}
	t.mu.Unlock()
	t.poke()
}

// Relead dispatches job's next fire with the lead it needs now, which the
// job must call whenever its quickness may have changed: a job that stops
// being quick gets its head start back for its next fire (at once if that
// fire is within its lead already), one that becomes quick is dispatched
// at its fire's time.
func (t *Trigger) Relead(job string) {
	t.mu.Lock()
	e := t.byJob[job]
	moved := false
	if e != nil && e.index >= 0 {
		e.askQuick()
		if due := fireplan.DueAt(e.sched, e.next, e.lead(t.lead)); !due.Equal(e.due) {
			e.due = due
			heap.Fix(&t.h, e.index)
			moved = true
		}
	}
	t.mu.Unlock()
	if moved {
		t.poke()
	}
}

func (t *Trigger) poke() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// Run dispatches due fires until ctx ends, on its caller's goroutine.
// Fires missed while the process could not run (a long pause) collapse
// into one fire at the latest one due. It waits on one timer of the clock,
// set for the first dispatch due (none while no job has a fire left),
// which pokes it awake as Set and Remove do; the timer is stopped when it
// returns.
func (t *Trigger) Run(ctx context.Context) {
	var timer Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		now := t.now()
		t.mu.Lock()
		for len(t.h) > 0 && !t.h[0].due.After(now) {
			e := t.h[0]
			at, lead := e.next, e.lead(t.lead)
			n := e.sched.Next(at)
			for !n.IsZero() && !fireplan.DueAt(e.sched, n, lead).After(now) {
				at, n = n, e.sched.Next(n)
			}
			e.setNext(n, lead)
			if e.next.IsZero() {
				heap.Pop(&t.h)
			} else {
				heap.Fix(&t.h, 0)
			}
			e.fire(at)
		}
		// Set for a time, not a duration: a clock moved since now was
		// read finds the timer due, not late.
		switch {
		case len(t.h) == 0:
			if timer != nil {
				timer.Stop()
			}
		case timer == nil:
			timer = t.clock.AfterFunc(t.h[0].due, t.poke)
		default:
			timer.Reset(t.h[0].due)
		}
		t.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.wake:
		}
	}
}

// Lead reports how far ahead of its time job's next fire is dispatched:
// the lead, or none while the job is quick (0 too for a job with no fire
// left or not scheduled). Tests ask it.
func (t *Trigger) Lead(job string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.byJob[job]
	if e == nil || e.next.IsZero() {
		return 0
	}
	return e.next.Sub(e.due)
}
