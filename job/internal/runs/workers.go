package runs

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Workers runs a scheduler's fires, runs and background work on goroutines
// kept between uses. A goroutine starts with a 2 KB stack, and a fire's
// (trigger to completion, with a one-item job's run on it) is several times
// that: a fresh goroutine per fire copied its stack to grow it twice,
// every fire. A kept one has grown it once.
//
// A task goes to the worker that became idle last, or to a new worker when
// none is idle. Idle workers wait on a channel of their own, so that
// handing one a task is a send and a wake-up; reap ends those idle through
// a whole period, and Close ends them all (a busy one once its task
// returns). The zero Workers is ready to use; it must not be copied.
type Workers struct {
	mu     sync.Mutex
	idle   []*worker // the last one idle last
	gen    uint64    // reap's count: a worker idle since an earlier one is reaped
	closed bool
	wg     sync.WaitGroup
}

type worker struct {
	tasks   chan func() // one task at a time; closed to end the worker
	idleGen uint64      // gen when it became idle
}

// ReapPeriod is how often idle workers are reaped: a worker idle since the
// reap before the last ends, 10 to 20 s after its last task. Longer than
// the period of a job firing every second or every few, which keeps its
// workers; short enough that a burst (a start registering thousands of
// jobs) leaves no crowd of idle goroutines for long.
const ReapPeriod = 10 * time.Second

// Do runs f on a worker and reports true; false, without running f, once
// Close has begun.
func (w *Workers) Do(f func()) bool {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return false
	}
	if n := len(w.idle); n > 0 {
		wk := w.idle[n-1]
		w.idle[n-1] = nil
		w.idle = w.idle[:n-1]
		w.mu.Unlock()
		wk.tasks <- f // buffered, and empty while the worker is idle
		return true
	}
	w.wg.Add(1)
	w.mu.Unlock()
	go w.work(&worker{tasks: make(chan func(), 1)}, f)
	return true
}

// parkedStack is the stack a worker keeps in use while it waits for a
// task. The garbage collector halves the stack of a goroutine that uses
// less than a quarter of it: a kept worker, parked with a few hundred bytes
// in use, lost the stack its tasks had grown at every collection and grew
// it again at its next task (a fire of 10,000 items spent a fifth of its
// CPU copying stacks). Parked with 4 KiB in use, a worker keeps a 16 KiB
// stack, which a fire's path and a one-item run fit in: an idle worker
// holds 16 KiB instead of 8 until it is reaped, what its next task would
// have grown it to anyway.
const parkedStack = 4 << 10

// work runs f, then every task handed to wk, until wk's channel is closed.
func (w *Workers) work(wk *worker, f func()) {
	defer w.wg.Done()
	var pad [parkedStack]byte
	holdStack(&pad)
	for {
		f()
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			return
		}
		wk.idleGen = w.gen
		w.idle = append(w.idle, wk)
		w.mu.Unlock()
		var ok bool
		if f, ok = <-wk.tasks; !ok {
			return
		}
	}
}

// reap ends the workers that have been idle since before the previous
// reap.
func (w *Workers) reap() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gen++
	n := 0
	for n < len(w.idle) && w.idle[n].idleGen+1 < w.gen {
		close(w.idle[n].tasks)
		n++
	}
	w.idle = slices.Delete(w.idle, 0, n)
}

// ReapEvery reaps idle workers every period (ReapPeriod for a scheduler's)
// until ctx ends. It runs on its caller's goroutine.
func (w *Workers) ReapEvery(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.reap()
		}
	}
}

// Close makes Do refuse new tasks, ends the idle workers and waits until
// ctx ends for the busy ones to finish their tasks. It reports whether
// every worker ended. (A task still busy after its runner stopped is a run
// whose job ignores its context: stop has reported it.)
func (w *Workers) Close(ctx context.Context) bool {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		for _, wk := range w.idle {
			close(wk.tasks)
		}
		w.idle = nil
	}
	w.mu.Unlock()
	return waitCtx(ctx, &w.wg)
}

// holdStack keeps pad in its caller's frame (see parkedStack).
//
//go:noinline
func holdStack(pad *[parkedStack]byte) { pad[0] = 0 }
