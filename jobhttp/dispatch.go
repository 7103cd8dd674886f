package jobhttp

import (
	"context"
	"errors"
	"net/http"

	"github.com/shardjob/shardjob/internal/admin"
)

// Dispatcher is what GET /dispatch/workers and the console's dispatcher
// page read: the dispatcher's caps and queues. jobhttp/dispatchhttp adapts
// a *dispatch.Dispatcher to it:
//
//	jobhttp.Options{Dispatcher: dispatchhttp.New(d)}
//
// It is an interface so that a handler which serves no dispatcher links no
// database driver.
type Dispatcher interface {
	// State reads the dispatcher's global cap, every worker's queue and,
	// on a node that runs tasks, its counters. An error that is a
	// *StatusError is answered with its code (503 when the dispatcher is
	// closed).
	State(ctx context.Context) (DispatchState, error)
}

// DispatchState is the answer of GET /dispatch/workers: the dispatcher's
// global cap and every worker's queue.
type DispatchState struct {
	// Node is the serving node's current lease id; "" when the dispatcher
	// only reads the store (it was not started to run tasks).
	Node   string        `json:"node"`
	Global DispatchCap   `json:"global"`
	Queues []WorkerQueue `json:"workers"`
	// Stats are the serving node's counters since it opened the store;
	// absent when Node is "".
	Stats *DispatchStats `json:"stats,omitempty"`
}

// DispatchCap is a cap and the tasks running against it.
type DispatchCap struct {
	MaxRunning int `json:"maxRunning"`
	Running    int `json:"running"`
}

// WorkerQueue is one worker's queue (dispatch.Queue).
type WorkerQueue struct {
	Worker     string `json:"worker"`
	MaxRunning int    `json:"maxRunning"`
	Running    int    `json:"running"`
	// Due counts the waiting tasks whose start time has come.
	Due int `json:"due"`
	// Late counts the tasks whose last start came after their acceptable
	// start.
	Late int `json:"late"`
	// Tasks counts the tasks by status: waiting, running, finished, failed,
	// cancelled.
	Tasks map[string]int `json:"tasks"`
}

// DispatchStats are dispatch.Stats.
type DispatchStats struct {
	Started    int64 `json:"started"`
	Late       int64 `json:"late"`
	LateFailed int64 `json:"lateFailed"`
	Finished   int64 `json:"finished"`
	TimedOut   int64 `json:"timedOut"`
	Retried    int64 `json:"retried"`
	Failed     int64 `json:"failed"`
	Reaped     int64 `json:"reaped"`
	Stale      int64 `json:"stale"`
	LeaseLost  int64 `json:"leaseLost"`
}

func (h *handler) dispatchWorkers(w http.ResponseWriter, r *http.Request) {
	d := h.dispatcher
	if d == nil {
		h.reply(w, http.StatusNotFound, httpError{Error: "the dispatcher is not configured (jobhttp.Options.Dispatcher; shardjob console --dispatch-driver)"})
		return
	}
	ctx, cancel := h.ctx(r)
	defer cancel()
	out, err := d.State(ctx)
	if err != nil {
		h.dispatchFail(w, r, err)
		return
	}
	if out.Queues == nil {
		out.Queues = []WorkerQueue{}
	}
	h.reply(w, http.StatusOK, out)
}

// dispatchFail answers a dispatcher error: with its code when it is a
// StatusError (503 when the dispatcher is closed, a state the dispatcher's
// own log tells), else as any other failure.
func (h *handler) dispatchFail(w http.ResponseWriter, r *http.Request, err error) {
	var se *StatusError
	if errors.As(err, &se) {
		h.reply(w, se.Code, httpError{Error: admin.OneLine(err)})
		return
	}
	h.fail(w, r, err)
}
