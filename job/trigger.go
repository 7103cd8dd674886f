package job

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
)

// trigger fires every job of a scheduler from one goroutine and one timer,
// whatever the number of jobs: a min-heap ordered by the time each job's
// next fire is dispatched. A fire is dispatched lead ahead of its time
// (see leadOf), so that its coordination is done when the time comes and
// its run starts then (the fire claims its items early; launch waits for
// the fire's time).
type trigger struct {
	mu    sync.Mutex
	h     triggerHeap
	byJob map[string]*triggerEntry
	wake  chan struct{}
	now   func() time.Time
	lead  time.Duration
	fire  func(job string, at time.Time) // must not block
}

type triggerEntry struct {
	job   string
	sched cron.Schedule
	next  time.Time // the next fire's time
	due   time.Time // when it is dispatched: next less its lead
	index int
}

// setNext makes next the entry's next fire.
func (e *triggerEntry) setNext(next time.Time, lead time.Duration) {
	e.next, e.due = next, dueAt(e.sched, next, lead)
}

// dueAt is when the fire at next is dispatched: next less its lead.
func dueAt(s cron.Schedule, next time.Time, lead time.Duration) time.Time {
	return next.Add(-leadOf(s, next, lead))
}

// leadOf is how long before the fire at next it is dispatched: lead, but
// no more than half the time from next to the fire after it, so that a
// fire is never dispatched before the one before it has had half its
// period (and one whose items are still busy claims only once they are
// released: untilClaim).
func leadOf(s cron.Schedule, next time.Time, lead time.Duration) time.Duration {
	if lead <= 0 || next.IsZero() {
		return 0
	}
	if after := s.Next(next); !after.IsZero() {
		return min(lead, after.Sub(next)/2)
	}
	return lead
}

// dueFire returns the latest fire of s dispatched by now with lead: the
// next fire once its lead has begun, otherwise the latest fire at or
// before now (zero if none in the past year).
func dueFire(s cron.Schedule, now time.Time, lead time.Duration) time.Time {
	if n := s.Next(now); !n.IsZero() && !dueAt(s, n, lead).After(now) {
		return n
	}
	return prevFire(s, now)
}

type triggerHeap []*triggerEntry

func (h triggerHeap) Len() int           { return len(h) }
func (h triggerHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h triggerHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].index = i; h[j].index = j }
func (h *triggerHeap) Push(x any)        { e := x.(*triggerEntry); e.index = len(*h); *h = append(*h, e) }
func (h *triggerHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.index = -1
	return e
}

func newTrigger(now func() time.Time, lead time.Duration, fire func(string, time.Time)) *trigger {
	return &trigger{byJob: map[string]*triggerEntry{}, wake: make(chan struct{}, 1), now: now, lead: lead, fire: fire}
}

// set schedules job (replacing an earlier schedule) from now on.
func (t *trigger) set(job string, s cron.Schedule) {
	t.mu.Lock()
	if e := t.byJob[job]; e != nil {
		heap.Remove(&t.h, e.index)
	}
	e := &triggerEntry{job: job, sched: s}
	e.setNext(s.Next(t.now()), t.lead)
	t.byJob[job] = e
	if !e.next.IsZero() {
		heap.Push(&t.h, e)
	}
	t.mu.Unlock()
	t.poke()
}

// remove unschedules job.
func (t *trigger) remove(job string) {
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

func (t *trigger) poke() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// run dispatches due fires until ctx ends. Fires missed while the process
// could not run (a long pause) collapse into one fire at the latest one
// due.
func (t *trigger) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := t.now()
		t.mu.Lock()
		for len(t.h) > 0 && !t.h[0].due.After(now) {
			e := t.h[0]
			at := e.next
			for n := e.sched.Next(at); !n.IsZero() && !dueAt(e.sched, n, t.lead).After(now); n = e.sched.Next(at) {
				at = n
			}
			e.setNext(e.sched.Next(at), t.lead)
			if e.next.IsZero() {
				heap.Pop(&t.h)
			} else {
				heap.Fix(&t.h, 0)
			}
			t.fire(e.job, at)
		}
		wait := time.Hour
		if len(t.h) > 0 {
			wait = t.h[0].due.Sub(now)
		}
		t.mu.Unlock()
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-t.wake:
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
		case <-timer.C:
		}
	}
}
