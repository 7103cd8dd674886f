package job

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
)

// trigger fires every job of a scheduler from one goroutine and one timer,
// whatever the number of jobs: a min-heap ordered by next fire time.
type trigger struct {
	mu    sync.Mutex
	h     triggerHeap
	byJob map[string]*triggerEntry
	wake  chan struct{}
	now   func() time.Time
	fire  func(job string, at time.Time) // must not block
}

type triggerEntry struct {
	job   string
	sched cron.Schedule
	next  time.Time
	index int
}

type triggerHeap []*triggerEntry

func (h triggerHeap) Len() int           { return len(h) }
func (h triggerHeap) Less(i, j int) bool { return h[i].next.Before(h[j].next) }
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

func newTrigger(now func() time.Time, fire func(string, time.Time)) *trigger {
	return &trigger{byJob: map[string]*triggerEntry{}, wake: make(chan struct{}, 1), now: now, fire: fire}
}

// set schedules job (replacing an earlier schedule) from now on.
func (t *trigger) set(job string, s cron.Schedule) {
	t.mu.Lock()
	if e := t.byJob[job]; e != nil {
		heap.Remove(&t.h, e.index)
	}
	e := &triggerEntry{job: job, sched: s, next: s.Next(t.now())}
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

// run fires due jobs until ctx ends. Fires missed while the process could
// not run (a long pause) collapse into one fire at the latest missed time.
func (t *trigger) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := t.now()
		t.mu.Lock()
		for len(t.h) > 0 && !t.h[0].next.After(now) {
			e := t.h[0]
			at := e.next
			for n := e.sched.Next(at); !n.IsZero() && !n.After(now); n = e.sched.Next(at) {
				at = n
			}
			e.next = e.sched.Next(at)
			if e.next.IsZero() {
				heap.Pop(&t.h)
			} else {
				heap.Fix(&t.h, 0)
			}
			t.fire(e.job, at)
		}
		wait := time.Hour
		if len(t.h) > 0 {
			wait = t.h[0].next.Sub(now)
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
