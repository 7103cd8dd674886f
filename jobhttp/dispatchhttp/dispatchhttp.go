// Package dispatchhttp serves a dispatcher's caps and queues through
// package jobhttp: GET /dispatch/workers and the console's dispatcher page.
// It lives apart from jobhttp so that a handler which serves no dispatcher
// does not link the dispatcher (whose database client, in turn, the program
// links by importing store/sqlite or store/postgres).
//
//	import _ "github.com/shardjob/shardjob/store/sqlite"
//
//	d, _ := dispatch.Open(ctx, dispatch.Config{DSN: "/var/lib/shop/dispatch.db"})
//	h := jobhttp.NewHandler(rc, jobhttp.Options{Dispatcher: dispatchhttp.New(d)})
package dispatchhttp

import (
	"context"
	"errors"
	"net/http"

	"github.com/shardjob/shardjob/dispatch"
	"github.com/shardjob/shardjob/jobhttp"
)

// New returns d as the handler's dispatcher (jobhttp.Options.Dispatcher),
// read only. A nil d returns nil: the handler then answers 404, dispatcher
// not configured. A closed d is answered 503.
func New(d *dispatch.Dispatcher) jobhttp.Dispatcher {
	if d == nil {
		return nil
	}
	return source{d: d}
}

type source struct{ d *dispatch.Dispatcher }

// State reads d's global cap and queues (two database reads) and, when d
// runs tasks on this node, its counters.
func (s source) State(ctx context.Context) (jobhttp.DispatchState, error) {
	g, err := s.d.Global(ctx)
	if err != nil {
		return jobhttp.DispatchState{}, classify(err)
	}
	qs, err := s.d.Queues(ctx)
	if err != nil {
		return jobhttp.DispatchState{}, classify(err)
	}
	out := jobhttp.DispatchState{
		Node:   s.d.Node(),
		Global: jobhttp.DispatchCap{MaxRunning: g.MaxRunning, Running: g.Running},
		Queues: make([]jobhttp.WorkerQueue, 0, len(qs)),
	}
	if out.Node != "" {
		st := s.d.Stats()
		out.Stats = &jobhttp.DispatchStats{Started: st.Started, Late: st.Late, LateFailed: st.LateFailed, Finished: st.Finished,
			TimedOut: st.TimedOut, Retried: st.Retried, Failed: st.Failed, Reaped: st.Reaped, Stale: st.Stale, LeaseLost: st.LeaseLost}
	}
	for _, q := range qs {
		var tasks map[string]int
		if q.Tasks != nil {
			tasks = make(map[string]int, len(q.Tasks))
		}
		for status, n := range q.Tasks {
			tasks[string(status)] = n
		}
		out.Queues = append(out.Queues, jobhttp.WorkerQueue{Worker: q.Worker, MaxRunning: q.MaxRunning, Running: q.Running,
			Due: q.Due, Late: q.Late, Tasks: tasks})
	}
	return out, nil
}

// classify gives a closed dispatcher 503; the handler answers the rest as
// any other failure.
func classify(err error) error {
	if errors.Is(err, dispatch.ErrClosed) {
		return &jobhttp.StatusError{Code: http.StatusServiceUnavailable, Err: err}
	}
	return err
}
